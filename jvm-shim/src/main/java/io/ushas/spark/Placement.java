package io.ushas.spark;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * How a batch write's committed files go from its staging directory into the table's partition
 * directories, at a cost that does not grow with anything but the partitions written:
 * <ul>
 * <li>the staging directory is walked with {@code listStatus} ({@code listFiles} builds a
 *     {@code LocatedFileStatus} per file, which on the local file system forks a process per file to read
 *     its permissions);</li>
 * <li>which partition directories already exist is learnt by listing their parents (one LIST of the table
 *     root for a one-column partitioning), not by a check or a listing per partition; only a partition
 *     directory that exists is listed (its files are what the commit replaces or keeps);</li>
 * <li>a new partition's directory is moved whole (one rename, no mkdirs: Hadoop's local mkdirs forks a
 *     {@code chmod}); an existing one gets the job's files one by one; the moves run on {@link #THREADS}
 *     threads (an object store's rename is a copy).</li>
 * </ul>
 */
final class Placement {
    /** moves running at once */
    static final int THREADS = 8;

    private Placement() {}

    /** One written partition directory ({@code ""}: the table root) after the moves: the data files that
     *  were there before (null: not listed, see {@link #place}) and this job's files at their final paths. */
    record Placed(String path, List<FileStatus> existing, Map<Path, FileStatus> files) {}

    /** The data files under {@code dir}, by directory relative to the walk's start (hidden names skipped:
     *  {@code _temporary}, {@code _owner}, {@code _SUCCESS}, checksums). */
    static void walk(FileSystem fs, Path dir, String rel, Map<String, List<FileStatus>> out) throws IOException {
        for (FileStatus s : fs.listStatus(dir)) {
            String n = s.getPath().getName();
            if (DataFileNames.hidden(n)) continue;
            if (s.isDirectory()) {
                walk(fs, s.getPath(), rel.isEmpty() ? n : rel + "/" + n, out);
            } else {
                out.computeIfAbsent(rel, k -> new ArrayList<>()).add(s);
            }
        }
    }

    /** Which of the relative directories {@code rels} exist under {@code root}: each level's parents that
     *  exist are listed once. */
    static Set<String> present(FileSystem fs, Path root, Collection<String> rels) throws IOException {
        Set<String> out = new HashSet<>();
        int depth = 0;
        for (String rel : rels) if (!rel.isEmpty()) depth = Math.max(depth, rel.split("/").length);
        for (int d = 1; d <= depth; d++) {
            Map<String, Set<String>> wanted = new TreeMap<>();  // parent -> children wanted at this depth
            for (String rel : rels) {
                if (rel.isEmpty()) continue;
                String[] parts = rel.split("/");
                if (parts.length < d) continue;
                String parent = String.join("/", java.util.Arrays.copyOfRange(parts, 0, d - 1));
                if (d > 1 && !out.contains(parent)) continue;
                wanted.computeIfAbsent(parent, k -> new TreeSet<>()).add(parts[d - 1]);
            }
            for (Map.Entry<String, Set<String>> e : wanted.entrySet()) {
                Path dir = e.getKey().isEmpty() ? root : new Path(root, e.getKey());
                FileStatus[] children;
                try {
                    children = fs.listStatus(dir);
                } catch (FileNotFoundException gone) {
                    continue;
                }
                for (FileStatus c : children) {
                    String n = c.getPath().getName();
                    if (c.isDirectory() && e.getValue().contains(n)) out.add(e.getKey().isEmpty() ? n : e.getKey() + "/" + n);
                }
            }
        }
        return out;
    }

    /** A direct write's files ({@link DirectCommitProtocol}), already at their final paths ({@code written}:
     *  relative directory -> files): nothing is moved; each file is added to {@code placed}. {@code listExisting}:
     *  list the data files each directory holds (the caller drops the running writes' files with
     *  {@link #withoutRunning}, reading that set after this listing; else {@link Placed#existing}
     *  is null, as {@link #place}; {@code nothingBefore}: the table's location was empty before the write, so
     *  the lists are empty, no directory is listed). */
    static List<Placed> inPlace(FileSystem fs, Path root, Map<String, List<FileStatus>> written, List<Path> placed,
                                boolean listExisting, boolean nothingBefore) {
        List<Placed> out = new ArrayList<>();
        for (Map.Entry<String, List<FileStatus>> e : written.entrySet()) {
            Path dir = e.getKey().isEmpty() ? root : new Path(root, e.getKey());
            Map<Path, FileStatus> files = new LinkedHashMap<>();
            for (FileStatus s : e.getValue()) {
                files.put(s.getPath(), s);
                placed.add(s.getPath());
            }
            out.add(new Placed(e.getKey(), !listExisting ? null : nothingBefore ? List.of() : dataFiles(fs, dir),
                    files));
        }
        return out;
    }

    /** Moves the job's files ({@code written}: relative directory -> files in the staging directory) into
     *  place under {@code root}, adding each placed file to {@code placed} as it lands (the caller removes
     *  them if the commit then fails). Returns the partitions in {@code written}'s order. {@code listExisting}:
     *  list the data files each directory had before (else {@link Placed#existing} is null: an append into
     *  partitions whose files the catalog records needs no listing, see {@link #existingBesides}). */
    static List<Placed> place(FileSystem fs, Path root, Path staging, Map<String, List<FileStatus>> written,
                              List<Path> placed, boolean listExisting) throws IOException {
        Set<String> present = present(fs, root, written.keySet());
        // parents of new multi-level partitions, made once each before the moves
        Set<String> parents = new TreeSet<>();
        for (String rel : written.keySet()) {
            int slash = rel.lastIndexOf('/');
            if (slash > 0 && !present.contains(rel) && !present.contains(rel.substring(0, slash))) {
                parents.add(rel.substring(0, slash));
            }
        }
        for (String p : parents) fs.mkdirs(new Path(root, p));
        List<Map.Entry<String, List<FileStatus>>> items = new ArrayList<>(written.entrySet());
        Map<String, Placed> done = new HashMap<>();
        if (items.size() <= 1) {
            for (Map.Entry<String, List<FileStatus>> e : items) {
                done.put(e.getKey(), one(fs, root, staging, e.getKey(), e.getValue(), present, placed, listExisting));
            }
        } else {
            ExecutorService pool = Executors.newFixedThreadPool(Math.min(THREADS, items.size()), r -> {
                Thread t = new Thread(r, "ushas-placement");
                t.setDaemon(true);
                return t;
            });
            try {
                Map<String, Future<Placed>> futures = new LinkedHashMap<>();
                for (Map.Entry<String, List<FileStatus>> e : items) {
                    futures.put(e.getKey(), pool.submit(() -> one(fs, root, staging, e.getKey(), e.getValue(), present,
                            placed, listExisting)));
                }
                IOException failed = null;
                for (Map.Entry<String, Future<Placed>> f : futures.entrySet()) {
                    try {
                        done.put(f.getKey(), f.getValue().get());
                    } catch (ExecutionException ex) {
                        Throwable cause = ex.getCause();
                        if (failed == null) {
                            failed = cause instanceof IOException io ? io : new IOException(String.valueOf(cause), cause);
                        }
                    } catch (InterruptedException ex) {
                        Thread.currentThread().interrupt();
                        if (failed == null) failed = new IOException("interrupted while placing the files", ex);
                    }
                }
                if (failed != null) throw failed;
            } finally {
                pool.shutdown();
            }
        }
        List<Placed> out = new ArrayList<>();
        for (Map.Entry<String, List<FileStatus>> e : items) out.add(done.get(e.getKey()));
        return out;
    }

    private static Placed one(FileSystem fs, Path root, Path staging, String rel, List<FileStatus> files,
                              Set<String> present, List<Path> placed, boolean listExisting) throws IOException {
        Path dir = rel.isEmpty() ? root : new Path(root, rel);
        Map<Path, FileStatus> moved = new LinkedHashMap<>();
        if (!rel.isEmpty() && !present.contains(rel) && !files.isEmpty()) {
            // a new partition: its staging directory becomes it (one rename)
            Path from = new Path(staging, rel);
            if (fs.rename(from, dir)) {
                Path first = new Path(dir, files.get(0).getPath().getName());
                if (fs.exists(first)) {
                    for (FileStatus s : files) {
                        Path target = new Path(dir, s.getPath().getName());
                        placed.add(target);
                        moved.put(target, s);
                    }
                    return new Placed(rel, List.of(), moved);
                }
                // another writer made the directory meanwhile: the rename nested ours inside it
                Path nested = new Path(dir, from.getName());
                List<FileStatus> again = new ArrayList<>();
                for (FileStatus s : files) again.add(fs.getFileStatus(new Path(nested, s.getPath().getName())));
                Placed p = each(fs, rel, dir, again, true, placed, listExisting);
                fs.delete(nested, true);
                return p;
            }
            // the directory appeared meanwhile: move the files one by one below
        }
        return each(fs, rel, dir, files, rel.isEmpty() || present.contains(rel), placed, listExisting);
    }

    /** Into an existing directory: its data files before, then this job's files moved one by one. */
    private static Placed each(FileSystem fs, String rel, Path dir, List<FileStatus> files, boolean exists,
                               List<Path> placed, boolean listExisting) throws IOException {
        List<FileStatus> existing = listExisting ? dataFiles(fs, dir) : null;
        Map<Path, FileStatus> moved = new LinkedHashMap<>();
        if (!files.isEmpty() && !exists) fs.mkdirs(dir);
        for (FileStatus s : files) {
            Path target = new Path(dir, s.getPath().getName());
            if (!fs.rename(s.getPath(), target)) throw new IOException("cannot move " + s.getPath() + " to " + target);
            placed.add(target);
            moved.put(target, s);
        }
        return new Placed(rel, existing, moved);
    }

    /** The data files directly in {@code dir} other than {@code besides} (the ones a job placed there): what
     *  was there before the job, listed after the moves. */
    static List<FileStatus> existingBesides(FileSystem fs, Path dir, java.util.Collection<Path> besides) {
        Set<String> mine = new HashSet<>();
        for (Path p : besides) mine.add(p.getName() + "\u0000" + p.getParent().toUri().getPath());
        List<FileStatus> out = new ArrayList<>();
        for (FileStatus s : dataFiles(fs, dir)) {
            Path p = s.getPath();
            if (!mine.contains(p.getName() + "\u0000" + p.getParent().toUri().getPath())) out.add(s);
        }
        return out;
    }

    /** {@code files} but the files of the {@code running} writes ({@link Staging#running}, read AFTER the
     *  listing that found {@code files}: a write's staging directory exists before its first file and goes
     *  only after the write ended, so no file of a running write slips through). */
    static List<FileStatus> withoutRunning(List<FileStatus> files, Set<String> running) {
        if (running.isEmpty()) return files;
        List<FileStatus> out = new ArrayList<>(files.size());
        for (FileStatus s : files) {
            if (!DataFileNames.ofRunningWrite(s.getPath().getName(), running)) out.add(s);
        }
        return out;
    }

    /** The data files directly in a directory (not hidden, not Spark's markers; the running writes' files
     *  are dropped by the caller: {@link #withoutRunning}). */
    static List<FileStatus> dataFiles(FileSystem fs, Path dir) {
        List<FileStatus> out = new ArrayList<>();
        try {
            for (FileStatus s : fs.listStatus(dir)) {
                String n = s.getPath().getName();
                if (s.isFile() && !DataFileNames.hidden(n)) out.add(s);
            }
        } catch (FileNotFoundException gone) {
            return out;
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot list " + dir + ": " + e, e);
        }
        return out;
    }
}
