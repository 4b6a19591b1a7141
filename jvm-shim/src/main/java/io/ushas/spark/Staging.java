package io.ushas.spark;

import org.apache.hadoop.fs.ChecksumFileSystem;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The staging directories of writes: {@code <table root>/_ushas_staging/<job id>}, one per write job,
 * with an {@code _owner} file (host, boot id, pid, process start) saying which driver runs it. A write
 * removes the staging directories of writes that died (their driver is a process of this machine
 * that is gone, or they are older than {@link #GRACE_MS}); {@code ushas purge} does the same
 * ({@code ushas_catalog.data_purge.stale_staging}).
 *
 * <p>Why this rule is also here and not only in Python: the owner is this JVM's own process
 * ({@link ProcessHandle}: pid and start instant, so a reused pid is not taken for the writer), the
 * directories live on any Hadoop file system (s3a, hdfs: Python's purge only sees local ones), and a write
 * must clear its table's dead staging before it starts, without a bridge round trip per directory. Keep the
 * two in step (host / boot id / pid, 24 h grace).
 */
final class Staging {
    static final String DIR = "_ushas_staging";
    /** a staging directory whose owner cannot be checked (another machine) is removed after this long */
    static final long GRACE_MS = 24L * 3600 * 1000;
    /** the name of a write's staging directory: its write id, a UUID (anything else there hides no file) */
    static final java.util.regex.Pattern WRITE_ID =
            java.util.regex.Pattern.compile("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

    private Staging() {}

    /** A write's staging directory under its table root (not created). */
    static Path path(Path root, String jobId) {
        return new Path(new Path(root, DIR), jobId);
    }

    static Path create(FileSystem fs, Path root, String jobId) throws IOException {
        Path dir = path(root, jobId);
        fs.mkdirs(dir);
        ProcessHandle self = ProcessHandle.current();
        String owner = "host=" + host() + "\nboot=" + bootId() + "\npid=" + self.pid() + "\nstart="
                + self.info().startInstant().map(i -> Long.toString(i.toEpochMilli())).orElse("") + "\n";
        // written without a checksum file (a few bytes, read back whole): one file create less per write
        FileSystem raw = fs instanceof ChecksumFileSystem c ? c.getRawFileSystem() : fs;
        try (FSDataOutputStream out = raw.create(new Path(dir, "_owner"), true)) {
            out.write(owner.getBytes(StandardCharsets.UTF_8));
        }
        return dir;
    }

    static void remove(FileSystem fs, Path staging) {
        try {
            fs.delete(staging, true);
            Path parent = staging.getParent();
            FileStatus[] left = fs.exists(parent) ? fs.listStatus(parent) : null;
            if (left != null && left.length == 0) fs.delete(parent, false);
        } catch (IOException ignored) {
            // another write's staging appeared, or the store refused: the next write / ushas purge retries
        }
    }

    /** Removes the staging directories under {@code root} whose write is over. A direct write's
     *  ({@link DirectCommitProtocol}: its files are at their final names, listed in its manifests) is ended
     *  first: {@code outcome} (write id -> COMMITTED / ABORTED, null when it cannot be asked) records it
     *  ABORTED unless it committed; the manifests' files are removed unless it COMMITTED (the commit may
     *  have gone through just before its driver died), and nothing is removed while the outcome is
     *  unknown. */
    static void removeStale(FileSystem fs, Path root, java.util.function.Function<String, String> outcome) {
        Path parent = new Path(root, DIR);
        try {
            if (!fs.exists(parent)) return;
            long now = System.currentTimeMillis();
            for (FileStatus s : fs.listStatus(parent)) {
                if (!s.isDirectory()) continue;
                boolean old = now - s.getModificationTime() > GRACE_MS;
                if (old || !alive(fs, new Path(s.getPath(), "_owner"))) {
                    if (DirectCommitProtocol.hasManifests(fs, s.getPath())) {
                        String state = outcome.apply(s.getPath().getName());
                        if (state == null) continue;  // not known: kept (its files stay hidden from listings)
                        if (!"COMMITTED".equals(state)) DirectCommitProtocol.removeListed(fs, s.getPath());
                    }
                    fs.delete(s.getPath(), true);
                }
            }
        } catch (IOException ignored) {
            // best effort: a later write or ushas purge removes them
        }
    }

    /** The write ids of the direct writes under {@code root} that have a staging directory with a manifest
     *  (running, or died and not yet cleaned up): listings of directories whose files the catalog does not
     *  record skip the files these writes create at their final names ({@link DataFileNames#ofRunningWrite}).
     *  A task writes its manifest before its first file, so a direct write has one before any file of it
     *  exists; a staged write's directory has none, and its files, moved into place just before it registers
     *  them, are never hidden. One listing, and one per staging directory. */
    static java.util.Set<String> running(FileSystem fs, Path root) {
        java.util.Set<String> out = new java.util.HashSet<>();
        try {
            for (FileStatus s : fs.listStatus(new Path(root, DIR))) {
                String name = s.getPath().getName();
                if (s.isDirectory() && WRITE_ID.matcher(name).matches() && direct(fs, s.getPath())) out.add(name);
            }
        } catch (IOException gone) {
            // no staging directory: no write running
        }
        return out;
    }

    /** Whether a staging directory is a direct write's (it has a manifest); one that cannot be listed counts
     *  as one (its files stay hidden). */
    private static boolean direct(FileSystem fs, Path staging) {
        try {
            return DirectCommitProtocol.hasManifests(fs, staging);
        } catch (IOException unreadable) {
            return true;
        }
    }

    private static boolean alive(FileSystem fs, Path ownerFile) throws IOException {
        Map<String, String> owner = new HashMap<>();
        try (FSDataInputStream in = fs.open(ownerFile)) {
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                int eq = line.indexOf('=');
                if (eq > 0) owner.put(line.substring(0, eq), line.substring(eq + 1));
            }
        } catch (java.io.FileNotFoundException e) {
            return true;  // being set up: the grace period decides
        }
        String boot = bootId();
        if (!boot.isEmpty() && !owner.getOrDefault("boot", "").isEmpty()) {
            if (!boot.equals(owner.get("boot"))) return true;  // another machine: the grace period decides
        } else if (!host().equals(owner.get("host"))) {
            return true;
        }
        long pid;
        try {
            pid = Long.parseLong(owner.getOrDefault("pid", ""));
        } catch (NumberFormatException e) {
            return false;
        }
        Optional<ProcessHandle> handle = ProcessHandle.of(pid);
        if (handle.isEmpty() || !handle.get().isAlive()) return false;
        String start = owner.getOrDefault("start", "");
        Optional<java.time.Instant> started = handle.get().info().startInstant();
        return start.isEmpty() || started.isEmpty() || Long.toString(started.get().toEpochMilli()).equals(start);
    }

    private static String host() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "";
        }
    }

    private static String bootId() {
        try {
            return Files.readString(Paths.get("/proc/sys/kernel/random/boot_id")).trim();
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }
}
