package io.ushas.bench;

import java.io.IOException;
import java.net.URI;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * BENCHMARK ONLY (bench/data_path.py compiles it at run time; never part of the product jar).
 *
 * The local filesystem under the scheme {@code slowfs:///} (register with
 * {@code spark.hadoop.fs.slowfs.impl=io.ushas.bench.LatencyFileSystem}) charging an object
 * store's request latency for metadata calls, and counting them. How it models S3:
 * <ul>
 *   <li>LIST (listStatus, and listLocatedStatus / listStatusIterator / globStatus, which go through
 *   it): one LIST request per page of 1,000 entries, each costing the latency (S3 LIST: 10-50 ms
 *   per page, sequential pages);</li>
 *   <li>HEAD (getFileStatus, exists, isDirectory, isFile): one request (S3A may add a LIST for a
 *   directory: not charged, in listing's favour);</li>
 *   <li>GET (open): the latency once per open, the first byte; bytes themselves are free.</li>
 * </ul>
 * Writes (create, mkdirs, rename, delete) are free: the benchmark only times reads. Calls made
 * inside a charged call (RawLocalFileSystem.listStatus stats each child) are not charged again.
 * The latency and the counters are static: one JVM (local mode) shares them across threads and
 * FileSystem instances; {@link #setLatencyMs} changes the latency at run time (0 during set-up).
 */
public class LatencyFileSystem extends RawLocalFileSystem {
    private static final URI NAME = URI.create("slowfs:///");
    private static volatile long latencyMs = 10;
    private static final AtomicLong LISTS = new AtomicLong();
    private static final AtomicLong HEADS = new AtomicLong();
    private static final AtomicLong GETS = new AtomicLong();
    private static final AtomicLong SLEPT_MS = new AtomicLong();
    private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);

    private interface Call<T> {
        T run() throws IOException;
    }

    public static void setLatencyMs(long ms) { latencyMs = ms; }
    public static long getLatencyMs() { return latencyMs; }

    /** "lists heads gets slept_ms" since the last reset. */
    public static String counts() {
        return LISTS.get() + " " + HEADS.get() + " " + GETS.get() + " " + SLEPT_MS.get();
    }

    public static void reset() {
        LISTS.set(0);
        HEADS.set(0);
        GETS.set(0);
        SLEPT_MS.set(0);
    }

    @Override public URI getUri() { return NAME; }
    @Override public String getScheme() { return "slowfs"; }

    /** Runs {@code call}; when it is the outermost charged call of this thread, counts and sleeps. */
    private static <T> T charged(AtomicLong counter, Call<T> call, java.util.function.ToLongFunction<T> requests)
            throws IOException {
        int[] depth = DEPTH.get();
        depth[0]++;
        T result;
        try {
            result = call.run();
        } finally {
            depth[0]--;
        }
        if (depth[0] == 0) {
            long n = requests.applyAsLong(result);
            counter.addAndGet(n);
            long ms = n * latencyMs;
            if (ms > 0) {
                SLEPT_MS.addAndGet(ms);
                try {
                    Thread.sleep(ms);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("interrupted in simulated latency");
                }
            }
        }
        return result;
    }

    @Override
    public FileStatus[] listStatus(Path f) throws IOException {
        return charged(LISTS, () -> super.listStatus(f), r -> Math.max(1, (r.length + 999) / 1000));
    }

    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
        return charged(HEADS, () -> super.getFileStatus(f), r -> 1);
    }

    @Override
    public boolean exists(Path f) throws IOException {
        return charged(HEADS, () -> super.exists(f), r -> 1);
    }

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        return charged(GETS, () -> super.open(f, bufferSize), r -> 1);
    }
}
