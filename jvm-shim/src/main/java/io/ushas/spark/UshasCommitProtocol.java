package io.ushas.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.internal.io.FileNameSpec;
import scala.Option;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Spark's SQL commit protocol, plus: when the job wrote into the location of a table of an Ushas catalog,
 * the written partitions (with their file count and bytes, listed after the commit) and the paths the write
 * cleared first are sent to Python before the write is acknowledged, in one metadata transaction.
 * Set as {@code spark.sql.sources.commitProtocolClass} (the catalog does it when the default is in place).
 */
public class UshasCommitProtocol extends SQLHadoopMapReduceCommitProtocol {
    private static final long serialVersionUID = 1L;
    /** table locations this JVM loaded -> the catalog and identifier to register writes with */
    private static final Map<String, Target> TARGETS = new ConcurrentHashMap<>();

    private final String outputPath;
    private final String writeJobId;
    private final boolean dynamic;
    private final List<String> deleted = new ArrayList<>();
    private transient java.util.Set<String> taskPartitions;

    public UshasCommitProtocol(String jobId, String path, boolean dynamicPartitionOverwrite) {
        super(jobId, path, dynamicPartitionOverwrite);
        this.outputPath = path;
        this.writeJobId = jobId;
        this.dynamic = dynamicPartitionOverwrite;
    }

    static void track(String location, UshasCatalog catalog, Identifier ident) {
        TARGETS.put(strip(location), new Target(catalog, ident));
    }

    private static String strip(String location) {
        return location.endsWith("/") ? location.substring(0, location.length() - 1) : location;
    }

    /** Task side: remember each partition directory this task writes into. */
    @Override
    public String newTaskTempFile(TaskAttemptContext taskContext, Option<String> dir, FileNameSpec spec) {
        if (dir.isDefined()) {
            synchronized (this) {
                if (taskPartitions == null) taskPartitions = new java.util.HashSet<>();
                taskPartitions.add(dir.get());
            }
        }
        return super.newTaskTempFile(taskContext, dir, spec);
    }

    /** Task side: Spark's message carries the written partitions only in dynamic mode; add them always. */
    @Override
    @SuppressWarnings("unchecked")
    public FileCommitProtocol.TaskCommitMessage commitTask(TaskAttemptContext taskContext) {
        FileCommitProtocol.TaskCommitMessage m = super.commitTask(taskContext);
        java.util.Set<String> mine;
        synchronized (this) {
            mine = taskPartitions == null ? java.util.Set.of() : new java.util.HashSet<>(taskPartitions);
            taskPartitions = null;
        }
        if (mine.isEmpty() || !(m.obj() instanceof Tuple2<?, ?> t)
                || !(t._2() instanceof scala.collection.immutable.Set<?> theirs)) {
            return m;
        }
        scala.collection.immutable.Set<String> merged = (scala.collection.immutable.Set<String>) theirs;
        for (String p : mine) merged = merged.$plus(p);
        return new FileCommitProtocol.TaskCommitMessage(new Tuple2<>(t._1(), merged));
    }

    @Override
    public boolean deleteWithJob(FileSystem fs, Path path, boolean recursive) {
        synchronized (deleted) {
            deleted.add(fs.makeQualified(path).toString());
        }
        return super.deleteWithJob(fs, path, recursive);
    }

    @Override
    public void commitJob(JobContext jobContext, scala.collection.immutable.Seq<FileCommitProtocol.TaskCommitMessage> commits) {
        super.commitJob(jobContext, commits);
        if (outputPath == null) return;
        Path root = new Path(outputPath);
        String qualifiedRoot;
        FileSystem fs;
        try {
            fs = root.getFileSystem(jobContext.getConfiguration());
            qualifiedRoot = strip(fs.makeQualified(root).toString());
        } catch (IOException e) {
            return;
        }
        Target target = TARGETS.get(qualifiedRoot);
        if (target == null) return;
        TreeSet<String> partitions = new TreeSet<>();
        for (FileCommitProtocol.TaskCommitMessage m : CollectionConverters.asJava(commits)) {
            if (m.obj() instanceof Tuple2<?, ?> t && t._2() instanceof scala.collection.Set<?> set) {
                for (Object p : CollectionConverters.asJava(set)) partitions.add(p.toString());
            }
        }
        ObjectNode r = target.catalog().request(target.ident());
        r.put("location", qualifiedRoot);
        r.put("dynamic", dynamic);
        ArrayNode del = r.putArray("deleted");
        synchronized (deleted) {
            for (String d : deleted) del.add(relative(qualifiedRoot, strip(d)));
        }
        ArrayNode written = r.putArray("partitions");
        List<List<FileStatus>> listed = new ArrayList<>();
        for (String p : partitions) listed.add(list(fs, new Path(root, p), p));
        List<FileStatus> rootFiles = partitions.isEmpty() ? list(fs, root, "") : List.of();
        // uncommitted batch writes' files are not counted; their set is read AFTER the listings (a write's
        // staging directory exists before its first file and goes only after the write ended)
        java.util.Set<String> running = Staging.running(fs, root);
        int k = 0;
        for (String p : partitions) {
            ObjectNode w = written.addObject().put("path", p);
            long[] counts = count(fs, listed.get(k++), w.putArray("job_files"), running);
            w.put("files", counts[0]).put("bytes", counts[1]);
        }
        if (partitions.isEmpty()) count(fs, rootFiles, r.putArray("root_files"), running);
        // the write's identity and the moment this JVM stops waiting: Python never commits it after that
        r.put("write_id", writeJobId);
        r.put("deadline_ms", System.currentTimeMillis() + 1000L * target.catalog().bridgeOptions().timeoutSeconds());
        target.catalog().call("commit_files", r, target.ident(), null);
        target.catalog().invalidateTable(target.ident());
    }

    /** Counts the data files {@code listed} (files, bytes) but the running writes', and adds this job's to {@code mine}
     *  (path, size, mtime): what the catalog records as the write's files. */
    private long[] count(FileSystem fs, List<FileStatus> listed, ArrayNode mine, java.util.Set<String> running) {
        long files = 0;
        long bytes = 0;
        for (FileStatus s : listed) {
            String n = s.getPath().getName();
            if (DataFileNames.ofRunningWrite(n, running)) continue;
            files++;
            bytes += s.getLen();
            if (n.contains(writeJobId)) {
                mine.addObject().put("path", fs.makeQualified(s.getPath()).toString())
                        .put("size", s.getLen()).put("mtime", s.getModificationTime());
            }
        }
        return new long[] {files, bytes};
    }

    /** The data files directly in {@code dir} (none when it is missing). */
    private static List<FileStatus> list(FileSystem fs, Path dir, String what) {
        List<FileStatus> out = new ArrayList<>();
        try {
            if (fs.exists(dir)) {
                for (FileStatus s : fs.listStatus(dir)) {
                    if (s.isFile() && !DataFileNames.hidden(s.getPath().getName())) out.add(s);
                }
            }
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot list written partition " + what + ": " + e, e);
        }
        return out;
    }

    private static String relative(String root, String path) {
        if (path.equals(root)) return "";
        if (path.startsWith(root + "/")) return path.substring(root.length() + 1);
        return path;  // a custom partition location: Python matches it against partition locations
    }

    record Target(UshasCatalog catalog, Identifier ident) {}
}
