package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.errors.QueryCompilationErrors;
import org.apache.spark.sql.execution.datasources.BasicWriteJobStatsTracker;
import org.apache.spark.sql.execution.datasources.BasicWriteTaskStats;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol;
import org.apache.spark.sql.execution.datasources.WriteJobDescription;
import org.apache.spark.sql.execution.datasources.WriteJobStatsTracker;
import org.apache.spark.sql.execution.datasources.WriteTaskResult;
import org.apache.spark.sql.execution.datasources.WriteTaskStats;
import org.apache.spark.sql.execution.datasources.v2.FileDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.FileWriterFactory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.UUID;

/**
 * A V2 batch write made of Spark's own file writing parts: {@link FileWriterFactory} writes each task's
 * rows with the format's {@code OutputWriterFactory} (from {@code FileFormat.prepareWrite}) into
 * partition directories under the table location, through Spark's SQL commit protocol. At commit:
 * the job's files are committed, then ONE bridge call registers the written partitions (values,
 * location, files, bytes, rows) and replaces / drops the overwritten ones in one metadata transaction,
 * and only then are the replaced files (those of earlier writes) removed. If the metadata commit
 * fails, this job's files are removed again and the metadata is untouched.
 */
final class UshasBatchWrite implements BatchWrite {
    private final UshasTable table;
    private final String mode;
    private final Filter[] filters;
    private final Job job;
    private final WriteJobDescription description;
    private final FileCommitProtocol committer;
    private final String jobId;
    private final Path root;

    private UshasBatchWrite(UshasTable table, String mode, Filter[] filters, Job job, WriteJobDescription description,
                            FileCommitProtocol committer, String jobId, Path root) {
        this.table = table;
        this.mode = mode;
        this.filters = filters;
        this.job = job;
        this.description = description;
        this.committer = committer;
        this.jobId = jobId;
        this.root = root;
    }

    static UshasBatchWrite create(UshasTable table, LogicalWriteInfo info, String mode, Filter[] filters) {
        SparkSession spark = SparkSession.active();
        SQLConf conf = spark.sessionState().conf();
        JsonNode answer = table.answer();
        String format = answer.get("format").asText();
        Map<String, String> options = new HashMap<>();
        for (Map.Entry<String, String> e : table.properties().entrySet()) {
            if (e.getKey().startsWith("option.")) options.put(e.getKey().substring("option.".length()), e.getValue());
        }
        options.putAll(info.options().asCaseSensitiveMap());
        scala.collection.immutable.Map<String, String> scalaOptions = scalaMap(options);
        Configuration hadoopConf = spark.sessionState().newHadoopConfWithOptions(scalaOptions);

        Path root;
        try {
            Path path = new Path(answer.get("location").asText());
            FileSystem fs = path.getFileSystem(hadoopConf);
            root = fs.makeQualified(path);
            if (!fs.exists(root)) fs.mkdirs(root);
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot prepare " + answer.get("location") + ": " + e, e);
        }

        FileFormat fileFormat = fileFormat(format, conf);
        StructType schema = info.schema();
        List<String> partitionNames = List.of(table.partitionSchema().fieldNames());
        List<Attribute> all = new ArrayList<>();
        List<Attribute> partitionCols = new ArrayList<>();
        List<Attribute> dataCols = new ArrayList<>();
        List<StructField> dataFields = new ArrayList<>();
        for (AttributeReference a : CollectionConverters.asJava(DataTypeUtils.toAttributes(schema))) {
            all.add(a);
            boolean isPartition = partitionNames.stream().anyMatch(p -> p.equalsIgnoreCase(a.name()));
            if (isPartition) {
                partitionCols.add(a);
            } else {
                dataCols.add(a);
                StructField f = schema.apply(a.name());
                if (!fileFormat.supportDataType(f.dataType())) {
                    throw sneak(QueryCompilationErrors.dataTypeUnsupportedByDataSourceError(format, f));
                }
                dataFields.add(f);
            }
        }

        Job job;
        try {
            job = Job.getInstance(hadoopConf);
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot create the write job: " + e, e);
        }
        job.setOutputKeyClass(Void.class);
        job.setOutputValueClass(InternalRow.class);
        FileOutputFormat.setOutputPath(job, root);
        String jobId = UUID.randomUUID().toString();
        // files go straight into their partition directories at job commit (no dynamic staging): what an
        // overwrite replaces is removed only after the metadata commit, by this job's id in the file names
        FileCommitProtocol committer = committer(conf, jobId, root.toString());
        OutputWriterFactory writerFactory = fileFormat.prepareWrite(spark, job, scalaOptions,
                new StructType(dataFields.toArray(new StructField[0])));
        SerializableConfiguration statsConf = new SerializableConfiguration(hadoopConf);
        WriteJobStatsTracker stats = new BasicWriteJobStatsTracker(statsConf, BasicWriteJobStatsTracker.metrics());
        String maxRecords = options.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase("maxRecordsPerFile"))
                .map(Map.Entry::getValue).findFirst().orElse(null);
        String timeZone = options.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase("timeZone"))
                .map(Map.Entry::getValue).findFirst().orElse(conf.sessionLocalTimeZone());
        WriteJobDescription description = new WriteJobDescription(
                jobId,
                new SerializableConfiguration(job.getConfiguration()),
                writerFactory,
                seq(all),
                seq(dataCols),
                seq(partitionCols),
                Option.empty(),
                root.toString(),
                scala.collection.immutable.Map$.MODULE$.empty(),
                maxRecords != null ? Long.parseLong(maxRecords) : conf.maxRecordsPerFile(),
                timeZone,
                seq(List.of(stats)));
        committer.setupJob(job);
        return new UshasBatchWrite(table, mode, filters, job, description, committer, jobId, root);
    }

    /** Spark's SQL commit protocol; a user's own protocol class is kept, ours (which registers V1-path
     *  writes) is not: this write registers its partitions itself. */
    private static FileCommitProtocol committer(SQLConf conf, String jobId, String path) {
        String cls = conf.fileCommitProtocolClass();
        if (cls == null || cls.equals(UshasCommitProtocol.class.getName())
                || cls.equals(SQLHadoopMapReduceCommitProtocol.class.getName())) {
            return new SQLHadoopMapReduceCommitProtocol(jobId, path, false);
        }
        return FileCommitProtocol.instantiate(cls, jobId, path, false);
    }

    private static FileFormat fileFormat(String format, SQLConf conf) {
        try {
            Object source = DataSource.lookupDataSource(format, conf).getDeclaredConstructor().newInstance();
            if (source instanceof FileFormat f) return f;
            if (source instanceof FileDataSourceV2 v2) return v2.fallbackFileFormat().getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException("Ushas catalog: cannot instantiate the " + format + " data source: " + e, e);
        }
        throw new IllegalArgumentException("Ushas catalog: " + format + " is not a file format");
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        return new FileWriterFactory(description, committer);
    }

    @Override
    public boolean useCommitCoordinator() {
        return false;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        List<FileCommitProtocol.TaskCommitMessage> taskMessages = new ArrayList<>();
        TreeSet<String> written = new TreeSet<>();
        long rows = 0;
        for (WriterCommitMessage m : messages) {
            WriteTaskResult result = (WriteTaskResult) m;
            taskMessages.add(result.commitMsg());
            for (String p : CollectionConverters.asJava(result.summary().updatedPartitions())) written.add(p);
            for (WriteTaskStats s : CollectionConverters.asJava(result.summary().stats())) {
                if (s instanceof BasicWriteTaskStats b) rows += b.numRows();
            }
        }
        if (table.partitionSchema().isEmpty()) written.add("");
        committer.commitJob(job, seq(taskMessages));

        FileSystem fs;
        try {
            fs = root.getFileSystem(job.getConfiguration());
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot reach " + root + ": " + e, e);
        }
        UshasCatalog catalog = table.catalog();
        ObjectNode r = catalog.request(table.ident());
        r.put("location", root.toString());
        r.put("mode", mode);
        r.put("job_id", jobId);
        r.put("rows", rows);
        ArrayNode fs_ = r.putArray("filters");
        for (Filter f : filters) fs_.add(Rows.filter(f));
        ArrayNode parts = r.putArray("written");
        for (String p : written) {
            long files = 0, bytes = 0, newFiles = 0, newBytes = 0;
            for (FileStatus s : dataFiles(fs, p.isEmpty() ? root : new Path(root, p))) {
                files++;
                bytes += s.getLen();
                if (s.getPath().getName().contains(jobId)) {
                    newFiles++;
                    newBytes += s.getLen();
                }
            }
            parts.addObject().put("path", p).put("files", files).put("bytes", bytes)
                    .put("new_files", newFiles).put("new_bytes", newBytes);
        }
        JsonNode answer;
        try {
            answer = catalog.call("commit_write", r, table.ident(), null);
        } catch (RuntimeException e) {
            // metadata untouched: take this job's files back out so readers do not see them either
            for (String p : written) removeFiles(fs, p.isEmpty() ? root : new Path(root, p), true);
            catalog.invalidateTable(table.ident());
            throw e;
        }
        // the metadata now names the new files only: remove the replaced ones
        for (JsonNode p : answer.get("clean")) {
            Path dir = new Path(p.asText());
            removeFiles(fs, dir, false);
            try {
                if (!fs.makeQualified(dir).equals(root) && fs.exists(dir) && fs.listStatus(dir).length == 0) {
                    fs.delete(dir, false);
                }
            } catch (IOException e) {
                throw new Errors.UshasBridgeException("Ushas catalog: cannot remove " + dir + ": " + e, e);
            }
        }
        catalog.invalidateTable(table.ident());
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        committer.abortJob(job);
    }

    /** The data files directly in a directory (not hidden, not Spark's markers). */
    private static List<FileStatus> dataFiles(FileSystem fs, Path dir) {
        List<FileStatus> out = new ArrayList<>();
        try {
            if (!fs.exists(dir)) return out;
            for (FileStatus s : fs.listStatus(dir)) {
                String n = s.getPath().getName();
                if (s.isFile() && !n.startsWith("_") && !n.startsWith(".")) out.add(s);
            }
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot list " + dir + ": " + e, e);
        }
        return out;
    }

    /** Removes this job's data files ({@code ours}) or every other data file of a directory, and the
     *  checksum / marker files that went with them. */
    private void removeFiles(FileSystem fs, Path dir, boolean ours) {
        try {
            if (!fs.exists(dir)) return;
            for (FileStatus s : fs.listStatus(dir)) {
                if (!s.isFile()) continue;
                String n = s.getPath().getName();
                boolean mine = n.contains(jobId);
                boolean crc = n.startsWith(".") && n.endsWith(".crc");
                boolean data = !n.startsWith("_") && !n.startsWith(".");
                if ((data || crc) && mine == ours) fs.delete(s.getPath(), false);
            }
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot clean " + dir + ": " + e, e);
        }
    }

    private static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
        return CollectionConverters.asScala(list).toSeq();
    }

    private static scala.collection.immutable.Map<String, String> scalaMap(Map<String, String> map) {
        return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(map));
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneak(Throwable e) throws E {
        throw (E) e;
    }

    @Override
    public String toString() {
        return "UshasBatchWrite(" + table.name() + ", " + mode.toLowerCase(Locale.ROOT) + ")";
    }
}
