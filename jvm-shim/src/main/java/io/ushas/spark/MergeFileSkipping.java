package io.ushas.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * What the parquet footers of a MERGE's group say about a key column (docs/row-level.md, "the probe form"): each
 * file's row groups' [min, max] of the key and whether it may hold a NULL. Two answers come of them: the files no
 * source key can be in ({@link Bounds#unmatched}: a MERGE that only carries unmatched target rows over neither reads
 * nor replaces them — what Spark's runtime group filter finds with a job over the group's key column, from a footer
 * a file), and the source keys no file of the group can hold ({@link Bounds#mayHold}: their rows match no target
 * row, so their {@code WHEN NOT MATCHED} rows are written by the statement's own job, beside the target's rows,
 * instead of after it). A file whose footer cannot be read or has no bounds for the column may hold any key.
 */
final class MergeFileSkipping {
    /** the session setting that turns it off ({@code false}): no footer is read, every file of the group is read and
     *  replaced, and the unmatched source rows are written after the target's tasks */
    static final String CONF = "spark.ushas.merge.skipFilesByFooters";

    /** the most files whose footers are read (a bigger group is read whole, as before) */
    static final int MAX_FILES = 1_000;

    private MergeFileSkipping() {
    }

    /** The files a scan skips: set on the driver before the scan's job starts (its tasks get it with the scan's
     *  reader, serialized then) and read by the write's commit (it does not replace them). */
    static final class Skipped implements Serializable {
        private volatile Set<String> paths = Set.of();

        void set(Set<String> skipped) {
            paths = Set.copyOf(skipped);
        }

        boolean contains(String path) {
            return paths.contains(path);
        }
    }

    /** One file's bounds of the key: its row groups' [min, max] (those with a non-NULL value), whether one may hold a
     *  NULL; {@code null} bounds ({@link #unknown}): any key. */
    record FileBounds(String path, long[] mins, long[] maxs, boolean mayHoldNull) {
        static FileBounds unknown(String path) {
            return new FileBounds(path, null, null, true);
        }

        boolean known() {
            return mins != null;
        }
    }

    /** The group's files' bounds of the key, with the union of their ranges for {@link #mayHold}. */
    static final class Bounds {
        private final List<FileBounds> files;
        private final boolean anyUnknown;
        private final boolean anyNull;
        private final long[] los;  // the union of every range, as disjoint sorted [los[i], his[i]]
        private final long[] his;

        Bounds(List<FileBounds> files) {
            this.files = List.copyOf(files);
            boolean unknown = false;
            boolean nulls = false;
            List<long[]> ranges = new ArrayList<>();
            for (FileBounds f : files) {
                unknown |= !f.known();
                nulls |= f.mayHoldNull();
                if (!f.known()) continue;
                for (int i = 0; i < f.mins().length; i++) ranges.add(new long[] {f.mins()[i], f.maxs()[i]});
            }
            anyUnknown = unknown;
            anyNull = nulls;
            ranges.sort((a, b) -> Long.compare(a[0], b[0]));
            long[] lo = new long[ranges.size()];
            long[] hi = new long[ranges.size()];
            int n = 0;
            for (long[] r : ranges) {
                if (n > 0 && r[0] <= hi[n - 1]) {
                    hi[n - 1] = Math.max(hi[n - 1], r[1]);
                } else {
                    lo[n] = r[0];
                    hi[n++] = r[1];
                }
            }
            los = Arrays.copyOf(lo, n);
            his = Arrays.copyOf(hi, n);
        }

        /** Whether a file of the group may hold {@code key} (a NULL: {@code null}). */
        boolean mayHold(Long key) {
            if (anyUnknown) return true;
            if (key == null) return anyNull;
            int at = Arrays.binarySearch(los, key);
            if (at >= 0) return true;
            at = -at - 2;  // the last range starting before the key
            return at >= 0 && key <= his[at];
        }

        /** The paths of the files none of whose row groups' bounds hold any of {@code keys} (sorted), nor a NULL when
         *  {@code nullKey}. */
        Set<String> unmatched(long[] keys, boolean nullKey) {
            Set<String> out = new HashSet<>();
            for (FileBounds f : files) {
                if (!f.known() || (nullKey && f.mayHoldNull())) continue;
                boolean holds = false;
                for (int i = 0; i < f.mins().length && !holds; i++) holds = holds(keys, f.mins()[i], f.maxs()[i]);
                if (!holds) out.add(f.path());
            }
            return out;
        }
    }

    /** The footers being read (started by {@link #read}); {@link #get} waits for them. */
    static final class Reading {
        private final ExecutorService pool;
        private final List<FileStatus> files;
        private final List<Future<FileBounds>> answers;

        private Reading(ExecutorService pool, List<FileStatus> files, List<Future<FileBounds>> answers) {
            this.pool = pool;
            this.files = files;
            this.answers = answers;
        }

        /** The bounds (null if interrupted: nothing is skipped, no key is known to be missing). */
        Bounds get() {
            try {
                List<FileBounds> out = new ArrayList<>();
                for (int i = 0; i < answers.size(); i++) {
                    try {
                        out.add(answers.get(i).get());
                    } catch (ExecutionException unreadable) {
                        // read as before: the scan reports what is wrong with the file as Spark does
                        out.add(FileBounds.unknown(files.get(i).getPath().toString()));
                    }
                }
                return new Bounds(out);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } finally {
                pool.shutdownNow();
            }
        }

        /** Stops reading (the statement failed before it needed the bounds). */
        void cancel() {
            pool.shutdownNow();
        }
    }

    /** Starts reading the footers of {@code files} for the top-level INT32 / INT64 {@code column}, in parallel (an
     *  object store's reads are slow, not heavy); null for more than {@link #MAX_FILES} files. */
    static Reading read(List<FileStatus> files, Configuration conf, String column) {
        if (files.size() > MAX_FILES) return null;
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(8, files.size())), r -> {
            Thread t = new Thread(r, "ushas-merge-footers");
            t.setDaemon(true);
            return t;
        });
        List<Future<FileBounds>> answers = new ArrayList<>();
        for (FileStatus f : files) answers.add(pool.submit(() -> bounds(f, conf, column)));
        return new Reading(pool, List.copyOf(files), answers);
    }

    private static FileBounds bounds(FileStatus f, Configuration conf, String column) throws java.io.IOException {
        String path = f.getPath().toString();
        ParquetMetadata footer = ParquetFileReader.readFooter(HadoopInputFile.fromStatus(f, conf),
                ParquetMetadataConverter.NO_FILTER);
        List<long[]> ranges = new ArrayList<>();
        boolean nulls = false;
        for (BlockMetaData block : footer.getBlocks()) {
            if (block.getRowCount() == 0) continue;
            ColumnChunkMetaData chunk = null;
            for (ColumnChunkMetaData c : block.getColumns()) {
                if (c.getPath().size() == 1 && c.getPath().toArray()[0].equalsIgnoreCase(column)) chunk = c;
            }
            if (chunk == null) return FileBounds.unknown(path);
            Statistics<?> st = chunk.getStatistics();
            if (st == null || st.isEmpty()) return FileBounds.unknown(path);
            nulls |= st.getNumNulls() != 0;  // a NULL, or an unknown count of them
            if (!st.hasNonNullValue()) continue;  // NULLs only
            if (!(st.genericGetMin() instanceof Number min) || !(st.genericGetMax() instanceof Number max)) {
                return FileBounds.unknown(path);
            }
            ranges.add(new long[] {min.longValue(), max.longValue()});
        }
        long[] mins = new long[ranges.size()];
        long[] maxs = new long[ranges.size()];
        for (int i = 0; i < mins.length; i++) {
            mins[i] = ranges.get(i)[0];
            maxs[i] = ranges.get(i)[1];
        }
        return new FileBounds(path, mins, maxs, nulls);
    }

    /** Whether sorted {@code keys} has a value in [min, max]. */
    static boolean holds(long[] keys, long min, long max) {
        int at = Arrays.binarySearch(keys, min);
        if (at < 0) at = -at - 1;
        return at < keys.length && keys[at] <= max;
    }
}
