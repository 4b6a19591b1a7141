package io.ushas.spark;

import org.apache.hadoop.fs.ChecksumFileSystem;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.internal.io.FileNameSpec;
import scala.Option;

import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The commit protocol of a batch write whose tasks write straight to their final names: a task creates
 * {@code <root>/<partition dir>/part-<split>-<job id>-<attempt>.<suffix>} directly (no attempt directory,
 * no task-commit rename, no job-commit merge, no move at the driver). The names carry the job id (the
 * write id) and the task attempt (speculative attempts never share a name).
 *
 * <p>Nothing a task writes is part of the table until the write's fenced commit registers it: reads use
 * the catalog's recorded file lists, and the listings of a partition whose files are not recorded skip the
 * names of running writes ({@link Staging#running}, {@link DataFileNames#ofRunningWrite}).
 *
 * <p>Before a task creates a file it appends the file's path to its manifest,
 * {@code <root>/_ushas_staging/<job id>/files-<attempt>} (flushed line by line), so that a driver killed
 * mid-write leaves nothing unreclaimable: the next write into the table or {@code ushas purge} finds the
 * staging directory's owner gone, asks the catalog what became of the write and removes the manifests'
 * files unless it COMMITTED ({@link Staging#removeStale}, {@code ushas_catalog.data.purge}). A task that
 * fails (or is aborted, or loses to a speculative copy) deletes its own files ({@link #abortTask}); a job
 * that fails, or whose commit is refused, deletes what its manifests list ({@link #abortJob}). The task's
 * commit message lists its files with their sizes and modification times: the driver neither walks nor
 * lists the directories it wrote.
 */
final class DirectCommitProtocol extends FileCommitProtocol implements Serializable {
    private static final long serialVersionUID = 1L;
    /** a write option / table option {@code option.ushas.write.direct=false} keeps the staged path */
    static final String SWITCH = "ushas.write.direct";
    /** the manifests' name prefix in the staging directory */
    static final String MANIFEST = "files-";
    /** a manifest line naming a directory the task created (a new partition's), not a file */
    static final String CREATED_DIR = "dir\t";

    /** One file a task committed: its partition directory relative to the root ("" for the root), path,
     *  size and modification time. */
    record Written(String dir, String path, long size, long mtime) implements Serializable {}

    private final String jobId;
    private final String root;
    private final String staging;
    /** task side: the files of each task attempt running in this JVM copy, and its open manifest */
    private transient Map<TaskAttemptID, TaskFiles> tasks;

    DirectCommitProtocol(String jobId, String root, String staging) {
        this.jobId = jobId;
        this.root = root;
        this.staging = staging;
    }

    /** Whether a write of a table at {@code root} can write its files directly: {@code file:} tables with
     *  Spark's default commit protocol (a user's own protocol class, and other schemes, keep the staged
     *  path), unless the option {@link #SWITCH} is false. */
    static boolean usable(Path root, boolean committerIsDefault, boolean switchedOff) {
        return committerIsDefault && !switchedOff && "file".equals(root.toUri().getScheme());
    }

    private static final class TaskFiles {
        final List<Path> files = new ArrayList<>();
        final List<String> dirs = new ArrayList<>();
        /** the partition directories this attempt looked at, and those it created (deepest first) */
        final Set<String> checked = new java.util.HashSet<>();
        final List<Path> createdDirs = new ArrayList<>();
        FSDataOutputStream manifest;
        Path manifestPath;
    }

    private synchronized TaskFiles task(TaskAttemptContext ctx) {
        if (tasks == null) tasks = new ConcurrentHashMap<>();
        return tasks.computeIfAbsent(ctx.getTaskAttemptID(), k -> new TaskFiles());
    }

    private synchronized TaskFiles forget(TaskAttemptContext ctx) {
        return tasks == null ? null : tasks.remove(ctx.getTaskAttemptID());
    }

    @Override
    public void setupJob(JobContext jobContext) {
        // the staging directory (with its _owner) is made by the write before the job starts
    }

    @Override
    public void commitJob(JobContext jobContext, scala.collection.immutable.Seq<TaskCommitMessage> commits) {
        // the driver's commit registers the files the messages list (UshasBatchWrite.commit)
    }

    /** Removes every file the job's manifests list (the job failed or its commit was refused). */
    @Override
    public void abortJob(JobContext jobContext) {
        try {
            Path dir = new Path(staging);
            removeListed(dir.getFileSystem(jobContext.getConfiguration()), dir);
        } catch (IOException ignored) {
            // the next write or ushas purge removes them (the staging directory stays until then)
        }
    }

    @Override
    public void setupTask(TaskAttemptContext taskContext) {
        task(taskContext);
    }

    @Override
    public String newTaskTempFile(TaskAttemptContext taskContext, Option<String> dir, String ext) {
        return newTaskTempFile(taskContext, dir, new FileNameSpec("", ext));
    }

    @Override
    public String newTaskTempFile(TaskAttemptContext taskContext, Option<String> dir, FileNameSpec spec) {
        String rel = dir.isDefined() ? dir.get() : "";
        Path parent = rel.isEmpty() ? new Path(root) : new Path(new Path(root), rel);
        return created(taskContext, rel, new Path(parent, name(taskContext, spec)), true);
    }

    @Override
    public String newTaskTempFileAbsPath(TaskAttemptContext taskContext, String absoluteDir, String ext) {
        return newTaskTempFileAbsPath(taskContext, absoluteDir, new FileNameSpec("", ext));
    }

    @Override
    public String newTaskTempFileAbsPath(TaskAttemptContext taskContext, String absoluteDir, FileNameSpec spec) {
        return created(taskContext, absoluteDir, new Path(absoluteDir, name(taskContext, spec)), false);
    }

    /** Spark's name ({@code part-<split>-<job id><suffix>}) with the task attempt after the job id. */
    private String name(TaskAttemptContext ctx, FileNameSpec spec) {
        TaskAttemptID attempt = ctx.getTaskAttemptID();
        return String.format("%spart-%05d-%s-%d%s", spec.prefix(), attempt.getTaskID().getId(), jobId,
                attempt.getId(), spec.suffix());
    }

    /** Records {@code file} in the task's manifest (flushed) before the writer creates it; the first time
     *  the attempt writes into a partition directory under the root ({@code underRoot}) that does not exist
     *  yet, that directory (and its missing parents below the root) too: an abort removes them again when
     *  empty, so that no partition directory of a write that did not commit is left for repair to find. */
    private String created(TaskAttemptContext ctx, String rel, Path file, boolean underRoot) {
        TaskFiles t = task(ctx);
        try {
            synchronized (t) {
                if (t.manifest == null) {
                    Path dir = new Path(staging);
                    FileSystem fs = raw(dir.getFileSystem(ctx.getConfiguration()));
                    t.manifestPath = new Path(dir, MANIFEST + ctx.getTaskAttemptID().getId());
                    t.manifest = fs.create(t.manifestPath, true);
                }
                if (underRoot && !rel.isEmpty() && t.checked.add(rel)) {
                    Path top = new Path(root);
                    FileSystem fs = top.getFileSystem(ctx.getConfiguration());
                    for (Path d = file.getParent(); d != null && d.depth() > top.depth() && !isDirectory(fs, d);
                         d = d.getParent()) {
                        t.manifest.write((CREATED_DIR + d + "\n").getBytes(StandardCharsets.UTF_8));
                        t.createdDirs.add(d);
                    }
                }
                t.manifest.write((file + "\n").getBytes(StandardCharsets.UTF_8));
                t.manifest.hflush();
                t.files.add(file);
                t.dirs.add(rel);
            }
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot record the file " + file + " of write "
                    + jobId + " in its manifest: " + e, e);
        }
        return file.toString();
    }

    /** The task's files, with their sizes (the writers are closed when Spark commits the task). */
    @Override
    public TaskCommitMessage commitTask(TaskAttemptContext taskContext) {
        TaskFiles t = forget(taskContext);
        ArrayList<Written> out = new ArrayList<>();
        if (t == null) return new TaskCommitMessage(out);
        long bytes = 0;
        try {
            closeManifest(t);
            FileSystem fs = new Path(root).getFileSystem(taskContext.getConfiguration());
            for (int i = 0; i < t.files.size(); i++) {
                Path f = fs.makeQualified(t.files.get(i));
                long[] sizeAndTime = sizeAndTime(fs, f);
                out.add(new Written(t.dirs.get(i), f.toString(), sizeAndTime[0], sizeAndTime[1]));
                bytes += sizeAndTime[0];
            }
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot commit a task of write " + jobId + ": " + e, e);
        }
        org.apache.spark.TaskContext task = org.apache.spark.TaskContext.get();
        if (task != null) task.taskMetrics().outputMetrics().setBytesWritten(bytes);  // as Spark's stats tracker
        return new TaskCommitMessage(out);
    }

    /** A file's size and modification time: on {@code file:} one {@code stat} (Hadoop's local
     *  {@code getFileStatus} makes five system calls: it loads the owner and permissions too). */
    private static long[] sizeAndTime(FileSystem fs, Path f) throws IOException {
        if ("file".equals(f.toUri().getScheme())) {
            java.nio.file.attribute.BasicFileAttributes a = java.nio.file.Files.readAttributes(
                    java.nio.file.Paths.get(f.toUri()), java.nio.file.attribute.BasicFileAttributes.class);
            return new long[] {a.size(), a.lastModifiedTime().toMillis()};
        }
        FileStatus s = fs.getFileStatus(f);
        return new long[] {s.getLen(), s.getModificationTime()};
    }

    /** Whether {@code d} is a directory: on {@code file:} one {@code stat}. */
    private static boolean isDirectory(FileSystem fs, Path d) throws IOException {
        if ("file".equals(d.toUri().getScheme())) return java.nio.file.Files.isDirectory(java.nio.file.Paths.get(d.toUri()));
        return fs.isDirectory(d);
    }

    /** Deletes the task attempt's own files, the directories it created (if empty) and its manifest. */
    @Override
    public void abortTask(TaskAttemptContext taskContext) {
        TaskFiles t = forget(taskContext);
        if (t == null) return;
        try {
            closeManifest(t);
            FileSystem fs = new Path(root).getFileSystem(taskContext.getConfiguration());
            for (Path f : t.files) fs.delete(f, false);
            removeEmpty(fs, t.createdDirs);
            if (t.manifestPath != null) raw(fs).delete(t.manifestPath, false);
        } catch (IOException ignored) {
            // the manifest (if left) names them: abortJob, the next write or ushas purge removes them
        }
    }

    private static void closeManifest(TaskFiles t) throws IOException {
        synchronized (t) {
            if (t.manifest != null) {
                t.manifest.close();
                t.manifest = null;
            }
        }
    }

    /** Deletes the directories {@code dirs} (deepest first) that are empty: never a directory with
     *  anything in it (another write's file included); best effort. */
    private static void removeEmpty(FileSystem fs, java.util.Collection<Path> dirs) {
        List<Path> deepestFirst = new ArrayList<>(new LinkedHashSet<>(dirs));
        deepestFirst.sort((a, b) -> Integer.compare(b.depth(), a.depth()));
        for (Path d : deepestFirst) {
            try {
                FileStatus[] in = fs.listStatus(d);
                if (in.length == 0) fs.delete(d, false);
            } catch (IOException ignored) {
                // gone, or not empty any more: kept
            }
        }
    }

    /** The files listed in the manifests of a staging directory. */
    static Set<Path> listed(FileSystem fs, Path stagingDir) throws IOException {
        return listed(fs, stagingDir, false);
    }

    /** The files (or, with {@code dirs}, the directories the tasks created) the manifests of a staging
     *  directory list. */
    private static Set<Path> listed(FileSystem fs, Path stagingDir, boolean dirs) throws IOException {
        Set<Path> out = new LinkedHashSet<>();
        FileStatus[] entries;
        try {
            entries = fs.listStatus(stagingDir);
        } catch (java.io.FileNotFoundException gone) {
            return out;
        }
        FileSystem raw = raw(fs);
        for (FileStatus s : entries) {
            if (!s.isFile() || !s.getPath().getName().startsWith(MANIFEST)) continue;
            try (FSDataInputStream in = raw.open(s.getPath())) {
                for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                    if (line.isBlank()) continue;
                    boolean dir = line.startsWith(CREATED_DIR);
                    if (dir == dirs) out.add(new Path(dir ? line.substring(CREATED_DIR.length()) : line));
                }
            } catch (java.io.FileNotFoundException gone) {
                // an aborted task removed it meanwhile
            }
        }
        return out;
    }

    /** Deletes the files the manifests of {@code stagingDir} list (a file already gone is no error), then the
     *  partition directories the tasks created if they are empty. Only a file whose name carries the write id
     *  (the staging directory's name) is deleted, never a directory: a torn manifest line removes nothing. */
    static void removeListed(FileSystem fs, Path stagingDir) throws IOException {
        removeUnregistered(fs, stagingDir, Set.of());
        removeEmpty(fs, listed(fs, stagingDir, true));
    }

    /** Deletes the files the manifests of {@code stagingDir} list but {@code registered} (paths) does not:
     *  after a commit, the files of attempts whose results Spark did not keep (speculative or duplicate
     *  attempts, a lost task result). Only files whose name carries the write id; never a directory. */
    static void removeUnregistered(FileSystem fs, Path stagingDir, Set<String> registered) throws IOException {
        String writeId = stagingDir.getName();
        for (Path f : listed(fs, stagingDir)) {
            if (!f.getName().contains(writeId) || registered.contains(f.toUri().getPath())) continue;
            try {
                if (fs.getFileStatus(f).isFile()) fs.delete(f, false);
            } catch (java.io.FileNotFoundException gone) {
                // never created, or already removed
            }
        }
    }

    /** Whether a staging directory holds manifests (a direct write's); a directory gone meanwhile has none. */
    static boolean hasManifests(FileSystem fs, Path stagingDir) throws IOException {
        FileStatus[] entries;
        try {
            entries = fs.listStatus(stagingDir);
        } catch (java.io.FileNotFoundException gone) {
            return false;
        }
        for (FileStatus s : entries) {
            if (s.getPath().getName().startsWith(MANIFEST)) return true;
        }
        return false;
    }

    /** Manifests are written without checksum files (read back whole; one file create less per task). */
    private static FileSystem raw(FileSystem fs) {
        return fs instanceof ChecksumFileSystem c ? c.getRawFileSystem() : fs;
    }
}
