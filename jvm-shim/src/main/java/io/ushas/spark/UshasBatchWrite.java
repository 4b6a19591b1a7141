package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
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
import java.util.TreeMap;
import java.util.UUID;

/**
 * A V2 batch write made of Spark's own file writing parts: {@link FileWriterFactory} writes each task's
 * rows with the format's {@code OutputWriterFactory} (from {@code FileFormat.prepareWrite}). On a
 * {@code file:} table with Spark's commit protocol the tasks write straight to their final names
 * ({@link DirectCommitProtocol}: no staging of the files, no move; the task messages list them). Otherwise
 * they write through Spark's SQL commit protocol into this job's own staging directory,
 * {@code <table root>/_ushas_staging/<job id>} (so Hadoop's {@code _temporary} is per job). At commit:
 * the job's files are committed into the staging directory, moved into the partition directories
 * ({@code <root>/dt=x/}, names unique per job; a new partition's directory is moved whole, in parallel:
 * {@link Placement}), then ONE bridge call registers the written partitions
 * with their exact file lists (path, size, mtime) and replaces / drops the overwritten ones in one
 * metadata transaction: only then are the files part of the table (reads use the recorded lists).
 * Nothing is deleted here: the files an overwrite replaces are kept until purge. If the metadata
 * commit fails (an overwrite that lost a race included), this job's files are removed; the staging
 * directory always is (but for a direct write whose outcome is unknown: its manifests name its files).
 * Staging directories of writes that died are removed by the next write.
 */
final class UshasBatchWrite implements BatchWrite {
    private final UshasTable table;
    private final String mode;
    private final Filter[] filters;
    /** the row-level statement this write replaces partitions for (null: a plain write) */
    private String operation;
    /** a row-level rewrite: the files its commit replaces (null: not one) */
    private java.util.function.Supplier<JsonNode> replacing;

    /** a MERGE planned as {@link MergeProbe}: the rows written after its tasks, before the commit (null: none) */
    private java.util.function.Supplier<MergeLateRows> late;

    UshasBatchWrite withLateRows(java.util.function.Supplier<MergeLateRows> late) {
        this.late = late;
        return this;
    }

    UshasBatchWrite replacing(java.util.function.Supplier<JsonNode> replacing) {
        this.replacing = replacing;
        return this;
    }
    private final Job job;
    private final WriteJobDescription description;
    private final FileCommitProtocol committer;
    private final String jobId;
    private final Path root;
    private final Path staging;
    private final long baseVersion;
    private final int[] emptyToNull;
    /** commit() could not learn whether its commit_write went through: its files are {@link #kept}. */
    private volatile boolean outcomeUnknown;
    /** the staging directory exists and the committer is set up ({@link #prepare}) */
    private boolean prepared;
    private final List<Path> kept = java.util.Collections.synchronizedList(new ArrayList<>());

    private UshasBatchWrite(UshasTable table, String mode, Filter[] filters, Job job, WriteJobDescription description,
                            FileCommitProtocol committer, String jobId, Path root, Path staging, long baseVersion,
                            int[] emptyToNull) {
        this.table = table;
        this.mode = mode;
        this.filters = filters;
        this.job = job;
        this.description = description;
        this.committer = committer;
        this.jobId = jobId;
        this.root = root;
        this.staging = staging;
        this.baseVersion = baseVersion;
        this.emptyToNull = emptyToNull;
    }

    static UshasBatchWrite create(UshasTable table, LogicalWriteInfo info, String mode, Filter[] filters,
                                  UshasStagedTable staged) {
        SparkSession spark = SparkSession.active();
        SQLConf conf = spark.sessionState().conf();
        JsonNode answer = table.answer();
        String format = answer.get("format").asText();
        Map<String, String> options = new HashMap<>();
        for (Map.Entry<String, String> e : table.properties().entrySet()) {
            if (e.getKey().startsWith("option.")) options.put(e.getKey().substring("option.".length()), e.getValue());
        }
        options.putAll(info.options().asCaseSensitiveMap());
        options.remove(UshasRowLevel.OPERATION_OPTION);  // the statement's name, not a file writer option
        scala.collection.immutable.Map<String, String> scalaOptions = scalaMap(options);
        Configuration hadoopConf = spark.sessionState().newHadoopConfWithOptions(scalaOptions);
        // file: tables: permissions of the files and directories this write creates set without a forked
        // chmod per create (LocalFiles); the option ushas.write.forklessLocalFiles=false turns it off
        LocalFiles.use(hadoopConf, !switchedOff(options, LocalFiles.SWITCH));

        String jobId = staged != null ? staged.writeId() : UUID.randomUUID().toString();
        Path root;
        Path staging;
        boolean freshRoot = false;
        try {
            Path path = new Path(answer.get("location").asText());
            FileSystem fs = path.getFileSystem(hadoopConf);
            root = fs.makeQualified(path);
            if (!fs.exists(root)) {
                fs.mkdirs(root);
                freshRoot = true;
            } else if (staged != null) {  // a CTAS / RTAS into an empty location: no partition had files before
                freshRoot = java.util.Arrays.stream(fs.listStatus(root))
                        .allMatch(s -> s.getPath().getName().equals(Staging.DIR));
            }
            staging = Staging.path(root, jobId);  // created when the job starts (prepare)
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot prepare " + answer.get("location") + ": " + e, e);
        }
        long baseVersion = answer.has("version") ? answer.get("version").asLong() : -1;

        FileFormat fileFormat = UshasSource.fileFormat(format, conf);
        StructType schema = info.schema();
        List<String> partitionNames = List.of(table.partitionSchema().fieldNames());
        List<Attribute> all = new ArrayList<>();
        List<Attribute> partitionCols = new ArrayList<>();
        List<Attribute> dataCols = new ArrayList<>();
        List<StructField> dataFields = new ArrayList<>();
        List<Integer> stringPartitions = new ArrayList<>();
        for (AttributeReference a : CollectionConverters.asJava(DataTypeUtils.toAttributes(schema))) {
            all.add(a);
            boolean isPartition = partitionNames.stream().anyMatch(p -> p.equalsIgnoreCase(a.name()));
            if (isPartition) {
                partitionCols.add(a);
                if (a.dataType() instanceof org.apache.spark.sql.types.StringType) stringPartitions.add(all.size() - 1);
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
        // no _SUCCESS marker (and its checksum file) in the staging directory: nothing reads it, the files move
        // out and the directory goes (two file creates less per write: a 1-row INSERT's fixed cost)
        job.getConfiguration().setBoolean(FileOutputCommitter.SUCCESSFUL_JOB_OUTPUT_DIR_MARKER, false);
        FileOutputFormat.setOutputPath(job, staging);
        // file: tables with Spark's commit protocol: the tasks write straight to their final names, which only
        // the fenced commit makes part of the table (DirectCommitProtocol); otherwise the job commits into
        // its own staging directory and commit() moves the files into the partition directories (file
        // names carry the job id: unique per job). Either way commit() registers them.
        boolean direct = DirectCommitProtocol.usable(root, defaultCommitter(conf),
                switchedOff(options, DirectCommitProtocol.SWITCH));
        FileCommitProtocol committer = direct ? new DirectCommitProtocol(jobId, root.toString(), staging.toString())
                : committer(conf, jobId, staging.toString());
        StructType dataSchema = new StructType(dataFields.toArray(new StructField[0]));
        OutputWriterFactory writerFactory = fileFormat.prepareWrite(spark, job, scalaOptions, dataSchema);
        // parquet: the writer set-up (settings, compressor, write support) once per task, not per file
        if (fileFormat.getClass() == org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat.class) {
            writerFactory = TaskParquetWriters.wrap(writerFactory, dataSchema,
                    !switchedOff(options, TaskParquetWriters.SWITCH));
        }
        SerializableConfiguration statsConf = new SerializableConfiguration(hadoopConf);
        // a direct write's file sizes come with its task messages: no file-system call per closed file
        WriteJobStatsTracker stats = direct ? new RowCounts()
                : new BasicWriteJobStatsTracker(statsConf, BasicWriteJobStatsTracker.metrics());
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
                BucketedWriterFactory.writerSpec(Bucketing.of(answer), all),
                staging.toString(),
                scala.collection.immutable.Map$.MODULE$.empty(),
                maxRecords != null ? Long.parseLong(maxRecords) : conf.maxRecordsPerFile(),
                timeZone,
                seq(List.of(stats)));
        UshasBatchWrite write = new UshasBatchWrite(table, mode, filters, job, description, committer, jobId, root,
                staging, baseVersion, stringPartitions.stream().mapToInt(Integer::intValue).toArray());
        write.staged = staged;
        write.direct = direct;
        write.freshRoot = freshRoot;
        write.dataSchema = info.schema().json();
        // a batch write that commits once per (stream id, batch id): foreachBatch's idempotent writes
        // (options ushas.streamId / ushas.batchId, as Delta's txnAppId / txnVersion)
        String streamId = info.options().get(STREAM_ID_OPTION);
        String batchId = info.options().get(BATCH_ID_OPTION);
        if (streamId != null || batchId != null) {
            if (streamId == null || batchId == null) {
                throw Errors.invalidArgument("a write with " + (streamId == null ? BATCH_ID_OPTION : STREAM_ID_OPTION)
                        + " needs " + (streamId == null ? STREAM_ID_OPTION : BATCH_ID_OPTION) + " too");
            }
            long id;
            try {
                id = Long.parseLong(batchId.trim());
            } catch (NumberFormatException e) {
                throw Errors.invalidArgument("option " + BATCH_ID_OPTION + " must be a non-negative integer, not '"
                        + batchId + "'");
            }
            if (id < 0) {
                throw Errors.invalidArgument("option " + BATCH_ID_OPTION + " must be a non-negative integer, not " + id);
            }
            write.forMicroBatch(streamId, id);
        }
        write.operation = info.options().get(UshasRowLevel.OPERATION_OPTION);
        return write;
    }

    /** Whether the session uses Spark's own SQL commit protocol (or ours, which this write replaces). */
    private static boolean defaultCommitter(SQLConf conf) {
        String cls = conf.fileCommitProtocolClass();
        return cls == null || cls.equals(UshasCommitProtocol.class.getName())
                || cls.equals(SQLHadoopMapReduceCommitProtocol.class.getName());
    }

    /** The tasks write their files at their final names ({@link DirectCommitProtocol}), not in staging. */
    private boolean direct;
    /** the table's location had no data before this write (a CTAS into a new location): nothing to list */
    private boolean freshRoot;

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

    /** The schema of the rows this write's files carry (JSON): a micro-batch's commit checks it against the
     *  table's schema then (an ALTER TABLE since the query started). */
    private String dataSchema;

    /** An atomic CTAS / RTAS: the staged table's commit registers this write's files (null: this write does). */
    private UshasStagedTable staged;

    static final String STREAM_ID_OPTION = "ushas.streamId";
    static final String BATCH_ID_OPTION = "ushas.batchId";

    /** A micro-batch of a streaming query (UshasStreamingWrite): its query id (null: not streaming) and batch id. */
    private String streamQueryId;
    private long streamBatchId = -1;

    UshasBatchWrite forMicroBatch(String queryId, long batchId) {
        this.streamQueryId = queryId;
        this.streamBatchId = batchId;
        return this;
    }

    /** The micro-batch was committed before (a re-run after a restart): this run registered nothing. */
    private volatile boolean alreadyCommitted;

    boolean alreadyCommitted() {
        return alreadyCommitted;
    }

    /** The Write whose commit statistics this batch reports (rows, bytes, files registered). */
    private UshasWrite owner;

    UshasBatchWrite reportingTo(UshasWrite write) {
        this.owner = write;
        return this;
    }

    /** The job's staging directory (with its {@code _owner}), the committer's set-up and the removal of dead
     *  writes' staging directories, once, when the job starts: Spark asks for the writer factory after it has
     *  run the query's shuffles (adaptive execution runs them first), so a query that fails before its write
     *  starts (in the shuffle of a clustered write, {@link UshasWrite#requiredDistribution}) leaves nothing
     *  behind and is not recorded: it never wrote. */
    private synchronized void prepare() {
        if (prepared) return;
        try {
            FileSystem fs = root.getFileSystem(job.getConfiguration());
            Staging.removeStale(fs, root, id -> endWrite(table, id, "its driver is gone (found by the next write)"));
            Staging.create(fs, root, jobId);
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot prepare " + root + ": " + e, e);
        }
        committer.setupJob(job);
        prepared = true;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        prepare();
        DataWriterFactory files = description.bucketSpec().isDefined()
                ? new BucketedWriterFactory(description, committer) : new FileWriterFactory(description, committer);
        return emptyToNull.length == 0 ? files : new EmptyToNull(files, emptyToNull);
    }

    @Override
    public boolean useCommitCoordinator() {
        return false;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        MergeLateRows after = late == null ? null : late.get();
        if (after != null) messages = after.written(messages, this);  // the MERGE's unmatched source rows
        FileSystem fs;
        try {
            fs = root.getFileSystem(job.getConfiguration());
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot reach " + root + ": " + e, e);
        }
        List<Path> placed = java.util.Collections.synchronizedList(new ArrayList<>());
        boolean registered = false;
        UshasCatalog catalog = table.catalog();
        try {
            List<FileCommitProtocol.TaskCommitMessage> taskMessages = new ArrayList<>();
            long rows = 0;
            for (WriterCommitMessage m : messages) {
                WriteTaskResult result = (WriteTaskResult) m;
                taskMessages.add(result.commitMsg());
                for (WriteTaskStats s : CollectionConverters.asJava(result.summary().stats())) {
                    if (s instanceof BasicWriteTaskStats b) rows += b.numRows();
                }
            }
            // the job's files, by partition directory (relative to the staging directory / the table root)
            TreeMap<String, List<FileStatus>> written = new TreeMap<>();
            if (table.partitionSchema().isEmpty()) written.put("", new ArrayList<>());
            if (direct) {  // at their final names, listed by the task messages: nothing to walk or move
                for (FileCommitProtocol.TaskCommitMessage m : taskMessages) {
                    for (Object o : (List<?>) m.obj()) {
                        DirectCommitProtocol.Written w = (DirectCommitProtocol.Written) o;
                        written.computeIfAbsent(w.dir(), k -> new ArrayList<>())
                                .add(new FileStatus(w.size(), false, 1, 0, w.mtime(), new Path(w.path())));
                    }
                }
            } else {
                committer.commitJob(job, seq(taskMessages));
                Placement.walk(fs, staging, "", written);
            }
            ObjectNode r = catalog.request(table.ident());
            r.put("location", root.toString());
            r.put("mode", mode);
            if (operation != null) r.put("operation", operation);  // DELETE / UPDATE / MERGE (UshasRowLevel)
            if (replacing != null) r.set("replaced", replacing.get());  // the files the rewrite read
            r.put("job_id", jobId);
            r.put("rows", rows);
            if (streamQueryId != null) {  // a micro-batch: committed once per (query id, batch id); complete
                r.put("query_id", streamQueryId);  // mode replaces the table's rows whatever came since the
                r.put("batch_id", streamBatchId);  // query loaded the table (no base version)
                r.put("data_schema", dataSchema);
            } else if (baseVersion >= 0) {
                r.put("base_version", baseVersion);
            }
            ArrayNode fs_ = r.putArray("filters");
            for (Filter f : filters) fs_.add(Rows.filter(f));
            if (staged != null) {  // the files are named in the staged write's entry before they are placed
                List<ObjectNode> targets = new ArrayList<>();
                for (Map.Entry<String, List<FileStatus>> e : written.entrySet()) {
                    Path dir = e.getKey().isEmpty() ? root : new Path(root, e.getKey());
                    for (FileStatus s : e.getValue()) targets.add(file(fs, new Path(dir, s.getPath().getName()), s));
                }
                staged.placing(targets);
            }
            long bytes = 0;
            ArrayNode parts = r.putArray("written");
            // an append into, or an INSERT OVERWRITE of, a partitioned table: the catalog needs what the
            // directories held before only for partitions whose files it does not record; it asks for it
            // (list_existing) then
            boolean listExisting = !(("append".equals(mode) || "dynamic".equals(mode) || "overwrite".equals(mode))
                    && operation == null && replacing == null && staged == null && streamQueryId == null
                    && !table.partitionSchema().isEmpty());
            if (!listExisting) r.put("existing_deferred", true);
            // a direct write's partitions read by listing get recorded (what they held plus its files), so
            // that its committed files never depend on a listing (Python: plan_write's record_listed)
            if (direct) r.put("direct", true);
            List<Placement.Placed> done = direct
                    ? Placement.inPlace(fs, root, written, placed, listExisting, freshRoot)
                    : Placement.place(fs, root, staging, written, placed, listExisting);
            // the writes that have not committed, read AFTER the listings: their files are no partition's yet
            java.util.Set<String> running = Staging.running(fs, root);
            for (Placement.Placed p : done) {
                ObjectNode part = parts.addObject().put("path", p.path());
                if (p.existing() != null) {
                    ArrayNode existing = part.putArray("existing");
                    for (FileStatus s : Placement.withoutRunning(p.existing(), running)) {
                        existing.add(file(fs, s.getPath(), s));
                    }
                }
                ArrayNode files = part.putArray("files");
                for (Map.Entry<Path, FileStatus> f : p.files().entrySet()) {
                    files.add(file(fs, f.getKey(), f.getValue()));
                    bytes += f.getValue().getLen();
                }
            }
            if (staged != null) {
                staged.written(r, placed);  // registered by the staged table's commit, with the table
                registered = true;
            } else {
                registered = register(catalog, r, () -> {  // what the directories held besides this job's files
                    List<Map.Entry<JsonNode, List<FileStatus>>> listed = new ArrayList<>();
                    for (JsonNode part : parts) {
                        String rel = part.get("path").asText();
                        listed.add(Map.entry(part, Placement.existingBesides(fs,
                                rel.isEmpty() ? root : new Path(root, rel), placed)));
                    }
                    java.util.Set<String> runningNow = Staging.running(fs, root);  // after the listings
                    for (Map.Entry<JsonNode, List<FileStatus>> e : listed) {
                        ArrayNode existing = ((ObjectNode) e.getKey()).putArray("existing");
                        for (FileStatus s : Placement.withoutRunning(e.getValue(), runningNow)) {
                            existing.add(file(fs, s.getPath(), s));
                        }
                    }
                    r.remove("existing_deferred");
                });
            }
            if (registered && owner != null) owner.committed(rows, bytes, placed.size());
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: the write into " + table.name() + " failed: " + e
                    + "; nothing was registered", e);
        } finally {
            if (outcomeUnknown) {
                kept.addAll(placed);  // abort() removes them if the write is then known ABORTED
            } else if (!registered && direct) {
                try {  // every file of the job (its manifests list them, placed or not): none was registered
                    DirectCommitProtocol.removeListed(fs, staging);
                } catch (IOException ignored) {
                    // the staging directory stays (below): the next write or ushas purge removes them
                }
            } else if (!registered) {
                // nothing registered: take this job's files back out (no reader uses them: no list names them)
                for (Path p : placed) {
                    try {
                        fs.delete(p, false);
                    } catch (IOException ignored) {
                        // left unregistered: reads ignore it, purge does not know it
                    }
                }
            }
            if (registered && direct && !outcomeUnknown) {
                // files of attempts Spark did not keep (speculative, duplicate, an attempt whose executor died):
                // their manifests name them, no task message does; never registered
                java.util.Set<String> mine = new java.util.HashSet<>();
                synchronized (placed) {
                    for (Path p : placed) mine.add(p.toUri().getPath());
                }
                try {
                    DirectCommitProtocol.removeUnregistered(fs, staging, mine);
                } catch (IOException ignored) {
                    // best effort: they are in no recorded list (a listed partition's recorded now, see "direct")
                }
            }
            // a staged write's goes after the table's commit; a direct write's whose outcome is unknown stays:
            // its manifests name its files (abort(), the next write or ushas purge removes them if ABORTED),
            // and its write id hides them from listings meanwhile
            if (staged == null && !(direct && outcomeUnknown)) Staging.remove(fs, staging);
            catalog.invalidateTable(table.ident());
        }
    }

    /**
     * The {@code commit_write} call, fenced: it carries this write's id (the job id) and the moment this
     * JVM stops waiting for it (now + {@code bridge.timeout}); Python never starts the commit after that.
     * An error answer means nothing was registered. A call whose outcome is unknown (bridge timeout, the
     * bridge died) ends the write with {@code abort_write}, which answers what it became: COMMITTED (the
     * commit went through: the write succeeded) or ABORTED (it never will: its files are removed). When
     * even that cannot be asked, the files are kept and the error names the write id and the command
     * that tells what became of it. Returns whether the write is registered (else throws). This stays in the
     * JVM: it is what to do when Python could not be reached or did not answer; what the write became is
     * Python's answer ({@code abort_write}), not decided here.
     */
    private boolean register(UshasCatalog catalog, ObjectNode r, Runnable listExisting) {
        Bridge.BridgeOptions options = catalog.bridgeOptions();
        r.put("write_id", jobId);
        r.put("deadline_ms", System.currentTimeMillis() + 1000L * options.timeoutSeconds());
        JsonNode answer;
        try {
            answer = Bridge.call("commit_write", r, options);
        } catch (RuntimeException unknown) {
            String state = endWrite(table, jobId, "the commit_write call failed: " + firstLine(unknown));
            if ("COMMITTED".equals(state)) return true;
            if ("ABORTED".equals(state)) {
                throw new Errors.UshasBridgeException("Ushas catalog: the write into " + table.name() + " failed: "
                        + unknown.getMessage() + "; write " + jobId + " is recorded ABORTED: nothing of it was "
                        + "registered, and nothing ever will be", unknown);
            }
            outcomeUnknown = true;
            throw new Errors.UshasBridgeException("Ushas catalog: the write into " + table.name() + " (write id "
                    + jobId + ") may or may not have been registered: " + unknown.getMessage() + "; its files are "
                    + "kept; run `ushas write " + jobId + "` (with this catalog's --uri and --project) to see what "
                    + "became of it", unknown);
        }
        JsonNode error = answer.get("error");
        if (error != null && !error.isNull()) throw Errors.toSpark(error, table.ident(), null);
        if (answer.path("list_existing").asBoolean(false) && listExisting != null) {
            listExisting.run();  // nothing was committed: asked again with the listing
            return register(catalog, r, null);
        }
        if (answer.path("batch_committed_before").asBoolean(false)) {
            alreadyCommitted = true;  // this re-run's files are taken back out: the first run's are the table's
            return false;
        }
        return true;
    }

    private static String firstLine(Throwable t) {
        String m = String.valueOf(t.getMessage());
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }

    private static ObjectNode file(FileSystem fs, Path path, FileStatus status) {
        ObjectNode f = Json.object();
        f.put("path", fs.makeQualified(path).toString());
        f.put("size", status.getLen());
        f.put("mtime", status.getModificationTime());
        return f;
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        String state = null;
        try {
            // the write is over: a commit of it that arrives later is refused (a committed one stays)
            state = endWrite(table, jobId, "Spark aborted the write");
            if ("ABORTED".equals(state)) removeKept();
            // a direct write's files are at their final names: removed (all its manifests list) only when the
            // write is known never to commit
            if (!direct || "ABORTED".equals(state)) committer.abortJob(job);
        } finally {
            try {
                // a direct write whose outcome is unknown keeps its staging directory: its manifests name its
                // files for the next write / ushas purge (which ask what became of it), its id hides them
                if (!direct || state != null) Staging.remove(root.getFileSystem(job.getConfiguration()), staging);
            } catch (IOException ignored) {
                // the next write or ushas purge removes it
            }
        }
    }

    /** {@code abort_write}: ends the write {@code writeId} into {@code table} unless it committed (this one, or
     *  another, dead write found by {@link Staging#removeStale}); its state (COMMITTED / ABORTED), or null when the
     *  bridge could not answer. */
    private static String endWrite(UshasTable table, String writeId, String reason) {
        UshasCatalog catalog = table.catalog();
        ObjectNode r = catalog.request(table.ident());
        r.put("write_id", writeId);
        r.put("reason", reason);
        try {
            JsonNode answer = Bridge.call("abort_write", r, catalog.bridgeOptions());
            JsonNode state = answer.get("state");
            return state == null || state.isNull() ? null : state.asText();
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** The files of a write whose outcome commit() could not learn, now known ABORTED: never registered. */
    private void removeKept() {
        synchronized (kept) {
            if (kept.isEmpty()) return;
            try {
                FileSystem fs = root.getFileSystem(job.getConfiguration());
                for (Path p : kept) fs.delete(p, false);
                kept.clear();
            } catch (IOException ignored) {
                // left unregistered: reads ignore them
            }
        }
    }

    /** Spark's {@code Empty2Null} for the writer: an empty string partition value is written as NULL
     *  (both land in {@code __HIVE_DEFAULT_PARTITION__}); the rows arrive sorted by the partition
     *  columns, and '' sorts right after NULL, so each task still writes one directory at a time. */
    static final class EmptyToNull implements DataWriterFactory {
        private static final long serialVersionUID = 1L;
        private final DataWriterFactory inner;
        private final int[] ordinals;

        EmptyToNull(DataWriterFactory inner, int[] ordinals) {
            this.inner = inner;
            this.ordinals = ordinals;
        }

        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
            DataWriter<InternalRow> writer = inner.createWriter(partitionId, taskId);
            return new DataWriter<>() {
                @Override
                public void write(InternalRow row) throws IOException {
                    InternalRow out = row;
                    for (int i : ordinals) {
                        if (!out.isNullAt(i) && out.getUTF8String(i).numBytes() == 0) {
                            if (out == row) out = row.copy();
                            out.setNullAt(i);
                        }
                    }
                    writer.write(out);
                }

                @Override
                public WriterCommitMessage commit() throws IOException {
                    return writer.commit();
                }

                @Override
                public void abort() throws IOException {
                    writer.abort();
                }

                @Override
                public void close() throws IOException {
                    writer.close();
                }

                @Override
                public org.apache.spark.sql.connector.metric.CustomTaskMetric[] currentMetricsValues() {
                    return writer.currentMetricsValues();
                }
            };
        }
    }

    private static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
        return CollectionConverters.asScala(list).toSeq();
    }

    /** Whether the write option {@code key} (any case) is {@code false}: a switch of the shim's write turned off. */
    private static boolean switchedOff(Map<String, String> options, String key) {
        return options.entrySet().stream().anyMatch(e -> e.getKey().equalsIgnoreCase(key)
                && "false".equalsIgnoreCase(e.getValue().trim()));
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
