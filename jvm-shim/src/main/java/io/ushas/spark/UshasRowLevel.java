package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsDeleteV2;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.FileFormat$;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.connector.PredicateUtils;
import org.apache.spark.sql.internal.connector.SupportsPushDownCatalystFilters;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * DELETE, UPDATE and MERGE INTO on a table of the catalog, copy-on-write (docs/row-level.md).
 *
 * <p>Spark resolves the target of these statements with write privileges ({@link UshasCatalog#loadTable(
 * org.apache.spark.sql.connector.catalog.Identifier, Set)}), which answers {@link Target}: Spark's
 * {@code RewriteDeleteFromTable} / {@code RewriteUpdateTable} / {@code RewriteMergeIntoTable} turn the
 * statement into a {@code ReplaceData} plan over an {@link Operation}. Its scan reads the table's version
 * as loaded: the partitions the condition's partition predicates select, and of those only the files that
 * hold a row the condition matches (the "group"): the scan has a hidden metadata column {@value #FILE_COLUMN}
 * (each row's file) that Spark's runtime group filter ({@code RowLevelOperationRuntimeGroupFiltering})
 * uses to run the condition first and hand the scan the files it matched ({@link GroupScan#filter}). The
 * plan computes the rows those files must hold afterwards, and the write replaces exactly those files
 * ({@link UshasWrite} mode {@code replace_files}) in one fenced commit that fails with {@code WriteConflict}
 * naming the partition if another write replaced or removed one of them since that version. A DELETE whose condition uses only partition columns is metadata-only ({@link
 * #canDeleteWhere}, Spark's {@code OptimizeMetadataOnlyDeleteFromTable}): the partitions are dropped,
 * no file is read or written.
 */
final class UshasRowLevel {
    private UshasRowLevel() {
    }

    /** Refused before anything is read or written: a user who reads the table through a row filter
     *  (the removal rule, {@link UshasTable#refuseRowRemoval}) or column masks (the statement would read
     *  the raw values: {@code UPDATE t SET visible = masked}). */
    static void refuse(UshasTable table, String what) {
        table.refuseRowRemoval(what);
        JsonNode p = UshasCatalog.policyOf(table.answer());
        if (p != null) {
            throw Errors.sneak(Errors.analysis("USHAS_RowPolicy", what + " of table " + table.name() + " is refused: "
                    + "user " + Json.text(p, "user") + " reads it through column masks, and the statement would "
                    + "read the unmasked values (have a member of the masks' exempt principal do it)"));
        }
    }

    /** The write target Spark plans DELETE / UPDATE / MERGE (and every INSERT) against. */
    static final class Target implements SupportsWrite, SupportsRowLevelOperations, SupportsDeleteV2,
            SupportsMetadataColumns, org.apache.spark.sql.connector.catalog.SupportsRead {
        private final UshasTable table;

        Target(UshasTable table) {
            this.table = table;
        }

        UshasTable table() {
            return table;
        }

        @Override
        public String name() {
            return table.name();
        }

        @Override
        public String toString() {
            return table.name();
        }

        @Override
        public Column[] columns() {
            return table.columns();
        }

        @Override
        public Transform[] partitioning() {
            return table.partitioning();
        }

        @Override
        public Map<String, String> properties() {
            return table.properties();
        }

        /** The file each row was read from ({@link #fileId}): the group unit of a row-level rewrite. */
        @Override
        public MetadataColumn[] metadataColumns() {
            return new MetadataColumn[] {new MetadataColumn() {
                @Override
                public String name() {
                    return FILE_COLUMN;
                }

                @Override
                public org.apache.spark.sql.types.DataType dataType() {
                    return DataTypes.LongType;
                }

                @Override
                public boolean isNullable() {
                    return false;
                }
            }};
        }

        /** The writes', and a batch read: Spark checks the target of DELETE / UPDATE / MERGE reads (its
         *  scan is {@link Operation#newScanBuilder}'s, never a plain read of this table). */
        @Override
        public Set<TableCapability> capabilities() {
            Set<TableCapability> caps = java.util.EnumSet.copyOf(UshasTable.WRITE_CAPABILITIES);
            caps.add(TableCapability.BATCH_READ);
            return caps;
        }

        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            return table.newWriteBuilder(info);
        }

        /** The table's rows as the statement loaded them (Spark plans a read of a DELETE's target even when
         *  it truncates); never through this for a user with a row filter or masks. */
        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            refuse(table, "reading the write target");
            return new GroupScanBuilder(new Operation(table, RowLevelOperation.Command.DELETE), true);
        }

        @Override
        public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
            String what = info.command().name();
            refuse(table, what.equals("MERGE") ? "MERGE INTO" : what.equals("DELETE") ? "DELETE FROM" : what);
            return () -> new Operation(table, info.command());
        }

        /** Metadata-only when every predicate uses only partition columns (and Python can evaluate it). */
        @Override
        public boolean canDeleteWhere(Predicate[] predicates) {
            if (table.partitionSchema().isEmpty()) return false;
            for (Predicate p : predicates) {
                scala.Option<Filter> f = PredicateUtils.toV1(p);
                if (f.isEmpty() || !partitionOnly(f.get().references())) return false;
                if ("unsupported".equals(Rows.filter(f.get()).path("op").asText())) return false;
            }
            return true;
        }

        private boolean partitionOnly(String[] references) {
            List<String> names = Arrays.asList(table.partitionSchema().fieldNames());
            for (String r : references) {
                if (names.stream().noneMatch(n -> n.equalsIgnoreCase(r))) return false;
            }
            return true;
        }

        /** Drops the partitions every predicate holds for, in one commit ({@code DELETE}); their files are
         *  kept until purge. */
        @Override
        public void deleteWhere(Predicate[] predicates) {
            refuse(table, "DELETE FROM");
            ObjectNode r = table.catalog().request(table.ident());
            ArrayNode filters = r.putArray("filters");
            for (Filter f : PredicateUtils.toV1(predicates)) filters.add(Rows.filter(f));
            r.put("base_version", table.answer().path("version").asLong());
            table.catalog().call("delete_where", r, table.ident(), null);
            table.catalog().invalidateTable(table.ident());
        }

        @Override
        public boolean truncateTable() {
            return table.truncateTable();
        }
    }

    /** One DELETE / UPDATE / MERGE: its scan (the group it replaces) and its write. */
    /** The catalog's row-level operation a {@code ReplaceData} writes with, or null (another catalog's). */
    static Operation operationOf(org.apache.spark.sql.catalyst.plans.logical.ReplaceData rd) {
        return rd.table() instanceof org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation r
                && r.table() instanceof org.apache.spark.sql.connector.write.RowLevelOperationTable t
                && t.operation() instanceof Operation op ? op : null;
    }

    static final class Operation implements RowLevelOperation {
        private final UshasTable table;
        private final Command command;
        /** the scan of the group (the files it reads), set when the scan is built */
        private volatile GroupScan scan;
        /** a MERGE's source rows as Spark estimates them ({@link MergeGroupFilter}), -1: unknown */
        private volatile long sourceRows = -1;

        void sourceRows(long rows) {
            sourceRows = rows;
        }

        /** a MERGE planned as {@link MergeProbe}: the rows its write writes after its tasks, set when it runs */
        private volatile MergeLateRows late;

        void late(MergeLateRows rows) {
            late = rows;
        }

        MergeLateRows late() {
            return late;
        }

        /** the table's partition columns */
        List<String> partitionColumns() {
            return Arrays.asList(table.partitionSchema().fieldNames());
        }

        /** Starts reading the parquet footers' bounds of {@code column} in the group's files ({@link MergeFileSkipping};
         *  a MERGE planned as {@link MergeProbe}): null when the table is not parquet or the group too big. */
        MergeFileSkipping.Reading readKeyBounds(String column) {
            GroupScan read = scan;
            if (read == null || !"parquet".equalsIgnoreCase(table.answer().path("format").asText())) return null;
            return MergeFileSkipping.read(read.groupFiles(), hadoopConf(SparkSession.active(), table), column);
        }

        /** Has the group's scan skip {@code files} (no source key can be in them): it neither reads nor replaces them. */
        void skip(Set<String> files) {
            GroupScan read = scan;
            if (read != null) read.skipped.set(files);
        }

        /** whether the table is bucketed (a bucket a task: rows written after the tasks would break it) */
        boolean bucketed() {
            return Bucketing.of(table.answer()) != null;
        }

        Operation(UshasTable table, Command command) {
            this.table = table;
            this.command = command;
        }

        @Override
        public Command command() {
            return command;
        }

        @Override
        public String description() {
            return "ushas copy-on-write " + command.name().toLowerCase(Locale.ROOT);
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            return new GroupScanBuilder(this, false);
        }

        /** Each row's file: Spark's runtime group filter selects the files to rewrite by it. */
        @Override
        public NamedReference[] requiredMetadataAttributes() {
            return new NamedReference[] {Expressions.column(FILE_COLUMN)};
        }

        /** A replacement of exactly the files the scan read once Spark's runtime filter pruned them. */
        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            GroupScan read = scan;
            if (read == null) {
                throw new IllegalStateException("Ushas catalog: the " + command + " of " + table.name()
                        + " was planned without its scan");
            }
            return new UshasWrite.Builder(table, new Info(info, command.name())).replacingFiles(read::replaced)
                    .withLateRows(this::late);
        }
    }

    /** The operation's write info, naming the statement: history records {@code DELETE} / {@code UPDATE} /
     *  {@code MERGE} (the option never reaches the file writers' own options). */
    private static final class Info implements LogicalWriteInfo {
        private final LogicalWriteInfo info;
        private final CaseInsensitiveStringMap options;

        Info(LogicalWriteInfo info, String operation) {
            this.info = info;
            Map<String, String> o = new HashMap<>(info.options().asCaseSensitiveMap());
            o.put(OPERATION_OPTION, operation);
            this.options = new CaseInsensitiveStringMap(o);
        }

        @Override
        public CaseInsensitiveStringMap options() {
            return options;
        }

        @Override
        public String queryId() {
            return info.queryId();
        }

        @Override
        public StructType schema() {
            return info.schema();
        }

        @Override
        public java.util.Optional<StructType> rowIdSchema() {
            return info.rowIdSchema();
        }

        @Override
        public java.util.Optional<StructType> metadataSchema() {
            return info.metadataSchema();
        }
    }

    /** the write option that names a row-level statement (read by {@link UshasBatchWrite}) */
    static final String OPERATION_OPTION = "ushas.operation";

    /** the hidden metadata column holding each row's file (a name no user column is expected to have) */
    static final String FILE_COLUMN = "__ushas_file";

    /** A file's value in {@link #FILE_COLUMN}: the first 8 bytes of the MD5 of its path, a BIGINT rather than
     *  the path, since the column travels with every row the statement reads (through a MERGE's join shuffle,
     *  the group filter's aggregate): 8 bytes a row instead of the path's ~120. The same in every scan of the
     *  table (the group filter's and the rewrite's list the files separately). Two files with the same id
     *  (a chance of about 3 in 10^8 among a million files) only make the rewrite take one more file, whose rows it writes
     *  back unchanged: never a wrong result. */
    static long fileId(String path) {
        try {
            byte[] d = java.security.MessageDigest.getInstance("MD5").digest(
                    path.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return java.nio.ByteBuffer.wrap(d).getLong();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Takes the condition's predicates on partition columns: they select the partitions (the group) read
     *  and replaced. Spark does not filter the rows read with them (the plan needs every row of the group). */
    private static final class GroupScanBuilder implements SupportsPushDownCatalystFilters,
            SupportsPushDownRequiredColumns {
        private final Operation op;
        private final List<Expression> partitionFilters = new ArrayList<>();
        /** whether the plan reads the file column (always, for the statement's own scan) */
        private boolean withFile;
        /** the top-level columns the plan reads (null: all): Spark's group filter reads only the condition's */
        private StructType required;

        @Override
        public void pruneColumns(StructType required) {
            withFile = Arrays.stream(required.fieldNames()).anyMatch(FILE_COLUMN::equalsIgnoreCase);
            this.required = required;
        }

        /** a plain read of the target (Spark's group filter runs the condition over it): the format may skip
         *  what the condition's data filters exclude (parquet row groups, orc stripes); Spark filters the rows
         *  again. Never for the statement's own scan, which needs every row of the files it rewrites. */
        private final boolean skipping;
        private final List<Filter> dataFilters = new ArrayList<>();

        GroupScanBuilder(Operation op, boolean skipping) {
            this.op = op;
            this.skipping = skipping;
        }

        @Override
        public scala.collection.immutable.Seq<Expression> pushFilters(scala.collection.immutable.Seq<Expression> filters) {
            List<String> names = Arrays.asList(op.table.partitionSchema().fieldNames());
            for (Expression e : CollectionConverters.asJava(filters)) {
                boolean onlyPartitions = !e.references().isEmpty();
                for (org.apache.spark.sql.catalyst.expressions.Attribute a
                        : CollectionConverters.asJava(e.references().toSeq())) {
                    onlyPartitions &= names.stream().anyMatch(n -> n.equalsIgnoreCase(a.name()));
                }
                boolean subquery = org.apache.spark.sql.catalyst.expressions.SubqueryExpression.hasSubquery(e);
                if (onlyPartitions && !subquery) {
                    partitionFilters.add(e);
                } else if (skipping && !subquery) {
                    scala.Option<Filter> f = org.apache.spark.sql.execution.datasources.DataSourceStrategy$.MODULE$
                            .translateFilter(e, true);
                    if (f.isDefined()) dataFilters.add(f.get());
                }
            }
            return filters;
        }

        @Override
        public Predicate[] pushedFilters() {
            return new Predicate[0];
        }

        @Override
        public Scan build() {
            GroupScan scan = new GroupScan(op, partitionFilters, withFile, required, dataFilters);
            op.scan = scan;
            return scan;
        }
    }

    /** The group's files as of the table version the statement loaded: one input partition per file, read
     *  by the format's own reader. */
    private static final class GroupScan implements Scan, Batch, SupportsRuntimeV2Filtering,
            org.apache.spark.sql.connector.read.SupportsReportOrdering {
        private final Operation op;
        private final List<PartitionDirectory> directories;
        private final StructType dataSchema;
        /** the data columns read from the files (those the plan needs) */
        private final StructType readDataSchema;
        private final StructType readSchema;
        private final boolean withFile;
        /** the files of the group (by their path), null: every file of {@link #directories} */
        private volatile Set<Long> selected;
        /** files of the group a MERGE found no match in ({@link MergeFileSkipping}): neither read nor replaced */
        private final MergeFileSkipping.Skipped skipped = new MergeFileSkipping.Skipped();

        /** filters the format may use to skip data (never to drop single rows: Spark filters them) */
        private final List<Filter> dataFilters;

        GroupScan(Operation op, List<Expression> partitionFilters, boolean withFile, StructType required,
                  List<Filter> dataFilters) {
            this.dataFilters = dataFilters;
            this.withFile = withFile;
            this.op = op;
            UshasTable table = op.table;
            SparkSession spark = SparkSession.active();
            StructType partitionSchema = table.partitionSchema();
            List<StructField> data = new ArrayList<>();
            List<String> names = Arrays.asList(partitionSchema.fieldNames());
            StructType schema = table.getTableInfo().schema();
            for (StructField f : schema.fields()) {
                if (names.stream().noneMatch(n -> n.equalsIgnoreCase(f.name()))) data.add(f);
            }
            this.dataSchema = new StructType(data.toArray(new StructField[0]));
            List<StructField> needed = new ArrayList<>();
            for (StructField f : data) {
                if (required == null || Arrays.stream(required.fieldNames()).anyMatch(f.name()::equalsIgnoreCase)) {
                    needed.add(f);
                }
            }
            this.readDataSchema = new StructType(needed.toArray(new StructField[0]));
            List<StructField> all = new ArrayList<>(needed);
            all.addAll(Arrays.asList(partitionSchema.fields()));
            if (withFile) all.add(new StructField(FILE_COLUMN, DataTypes.LongType, false,
                    org.apache.spark.sql.types.Metadata.empty()));
            this.readSchema = new StructType(all.toArray(new StructField[0]));
            JsonNode answer = table.answer();
            UshasFileIndex index = new UshasFileIndex(table.catalog(), table.ident(), partitionSchema,
                    new Path(answer.get("location").asText()), hadoopConf(spark, table), SQLConf.get().defaultSizeInBytes(),
                    null, answer.path("version").asLong());
            this.directories = CollectionConverters.asJava(index.listFiles(
                    CollectionConverters.asScala(partitionFilters).toList(),
                    CollectionConverters.asScala(List.<Expression>of()).toList()));
        }

        /** The file column, for Spark's runtime group filter, unless {@link MergeGroupFilter} declines it (a
         *  MERGE whose source has many rows per file of a small group hits every file: the filter's job would
         *  select them all). */
        @Override
        public NamedReference[] filterAttributes() {
            if (!withFile) return new NamedReference[0];
            long files = 0;
            long bytes = 0;
            for (PartitionDirectory d : directories) {
                for (FileStatusWithMetadata f : CollectionConverters.asJava(d.files())) {
                    files++;
                    bytes += f.getLen();
                }
            }
            long wave = SQLConf.get().filesMaxPartitionBytes()
                    * SparkSession.active().sparkContext().defaultParallelism();
            if (MergeGroupFilter.declines(op.table.name(), op.table.properties().get(MergeGroupFilter.PROPERTY),
                    op.command == RowLevelOperation.Command.MERGE, op.sourceRows, files, bytes, wave)) {
                return new NamedReference[0];
            }
            return new NamedReference[] {Expressions.column(FILE_COLUMN)};
        }

        /** Spark's runtime group filter: {@code __ushas_file IN (the files holding a matching row)}. */
        @Override
        public void filter(Predicate[] predicates) {
            for (Predicate p : predicates) {
                if (!("IN".equals(p.name()) || "=".equals(p.name())) || p.children().length == 0
                        || !(p.children()[0] instanceof NamedReference ref)
                        || !FILE_COLUMN.equalsIgnoreCase(String.join(".", ref.fieldNames()))) {
                    continue;
                }
                Set<Long> files = new HashSet<>();
                for (int i = 1; i < p.children().length; i++) {
                    if (p.children()[i] instanceof Literal<?> lit && lit.value() instanceof Number n) {
                        files.add(n.longValue());
                    }
                }
                Set<Long> before = selected;
                if (before != null) files.retainAll(before);
                selected = files;
            }
        }

        private boolean inGroup(FileStatusWithMetadata f) {
            Set<Long> s = selected;
            return (s == null || s.contains(fileId(f.getPath().toString()))) && !skipped.contains(f.getPath().toString());
        }

        /** The group's files. */
        List<org.apache.hadoop.fs.FileStatus> groupFiles() {
            List<org.apache.hadoop.fs.FileStatus> out = new ArrayList<>();
            for (PartitionDirectory d : directories) {
                for (FileStatusWithMetadata f : CollectionConverters.asJava(d.files())) {
                    if (inGroup(f)) out.add(f.fileStatus());
                }
            }
            return out;
        }

        /** The files the statement replaces, by partition: {@code [{"values": {...}, "files": [path, ...]}]}; a
         *  partition it read without replacing a file of it: {@code {"values": {...}, "files": [],
         *  "scanned_only": true}}. */
        JsonNode replaced() {
            ArrayNode out = Json.MAPPER.createArrayNode();
            StructType partitionSchema = op.table.partitionSchema();
            for (PartitionDirectory d : directories) {
                ArrayNode files = null;
                for (FileStatusWithMetadata f : CollectionConverters.asJava(d.files())) {
                    if (!inGroup(f)) continue;
                    if (files == null) {
                        ObjectNode part = out.addObject();
                        part.set("values", Rows.toJson(d.values(), partitionSchema));
                        files = part.putArray("files");
                    }
                    files.add(f.getPath().toString());
                }
                if (files == null) {  // read (for serializable isolation: nothing may be added to it), not rewritten
                    ObjectNode part = out.addObject();
                    part.set("values", Rows.toJson(d.values(), partitionSchema));
                    part.putArray("files");
                    part.put("scanned_only", true);
                }
            }
            return out;
        }

        @Override
        public StructType readSchema() {
            return readSchema;
        }

        /** Each input partition's rows come sorted by the partition columns (its files are taken in the
         *  partitions' order: {@link #planInputPartitions}), so Spark drops the write's sort by them
         *  ({@code RemoveRedundantSorts}) where the rewrite keeps the partition values (a DELETE, an UPDATE
         *  that does not set them). */
        @Override
        public org.apache.spark.sql.connector.expressions.SortOrder[] outputOrdering() {
            return Arrays.stream(op.table.partitionSchema().fieldNames())
                    .map(c -> Expressions.sort(Expressions.column(c),
                            org.apache.spark.sql.connector.expressions.SortDirection.ASCENDING,
                            org.apache.spark.sql.connector.expressions.NullOrdering.NULLS_FIRST))
                    .toArray(org.apache.spark.sql.connector.expressions.SortOrder[]::new);
        }

        @Override
        public String description() {
            return "ushas " + op.table.name() + " version " + op.table.answer().path("version").asLong() + ", "
                    + directories.size() + (op.table.partitionSchema().isEmpty() ? " table" : " partitions");
        }

        @Override
        public Batch toBatch() {
            return this;
        }

        /** The group's files packed into input partitions as Spark packs a file scan's
         *  ({@code spark.sql.files.maxPartitionBytes}, {@code openCostInBytes}; {@code FilePartition.maxSplitBytes}),
         *  whole files, the partitions sorted by their values: a task reads several small files (one task per file made
         *  the group filter and the rewrite cost a task per file), and its rows stay grouped by partition, so
         *  each task still writes one file per partition it holds. */
        @Override
        public InputPartition[] planInputPartitions() {
            StructType partitionSchema = op.table.partitionSchema();
            List<PartitionDirectory> group = new ArrayList<>();
            for (PartitionDirectory d : directories) {
                List<FileStatusWithMetadata> files = new ArrayList<>();
                for (FileStatusWithMetadata f : CollectionConverters.asJava(d.files())) {
                    if (inGroup(f)) files.add(f);
                }
                if (!files.isEmpty()) group.add(new PartitionDirectory(d.values(), CollectionConverters.asScala(files).toList()));
            }
            if (!partitionSchema.isEmpty()) {  // ascending, nulls first: what outputOrdering reports
                List<org.apache.spark.sql.types.DataType> types = new ArrayList<>();
                for (StructField f : partitionSchema.fields()) types.add(f.dataType());
                scala.math.Ordering<InternalRow> order = org.apache.spark.sql.catalyst.expressions.InterpretedOrdering$
                        .MODULE$.forSchema(CollectionConverters.asScala(types).toList());
                group.sort((x, y) -> order.compare(x.values(), y.values()));
            }
            SparkSession spark = SparkSession.active();
            long maxSplit = org.apache.spark.sql.execution.datasources.FilePartition$.MODULE$.maxSplitBytes(spark,
                    CollectionConverters.asScala(group).toList());
            long openCost = SQLConf.get().filesOpenCostInBytes();
            if (op.command == RowLevelOperation.Command.MERGE) {  // tasks for a few files each: the files a MERGE
                long total = 0;  // finds no match in (MergeFileSkipping) leave the others spread over the cores
                for (PartitionDirectory d : group) {
                    for (FileStatusWithMetadata f : CollectionConverters.asJava(d.files())) total += f.getLen() + openCost;
                }
                maxSplit = Math.min(maxSplit, Math.max(openCost, total / (4L * spark.sparkContext().defaultParallelism())));
            }
            List<InputPartition> out = new ArrayList<>();
            List<PartitionedFile> current = new ArrayList<>();
            long size = 0;
            for (PartitionDirectory d : group) {
                for (FileStatusWithMetadata f : CollectionConverters.asJava(d.files())) {
                    long len = f.getLen();
                    InternalRow values = d.values().copy();
                    if (withFile) {  // the file is one more constant of the file's rows, like its partition values
                        Object[] vs = new Object[partitionSchema.length() + 1];
                        for (int i = 0; i < partitionSchema.length(); i++) {
                            vs[i] = values.get(i, partitionSchema.fields()[i].dataType());
                        }
                        vs[partitionSchema.length()] = fileId(f.getPath().toString());
                        values = new GenericInternalRow(vs);
                    }
                    if (!current.isEmpty() && size + len > maxSplit) {
                        out.add(new GroupReads.FilePart(current.toArray(new PartitionedFile[0])));
                        current = new ArrayList<>();
                        size = 0;
                    }
                    current.add(new PartitionedFile(values,
                            org.apache.spark.paths.SparkPath.fromFileStatus(f.fileStatus()), 0, len, new String[0],
                            f.getModificationTime(), len, scala.collection.immutable.Map$.MODULE$.empty()));
                    size += len + openCost;
                }
            }
            if (!current.isEmpty()) out.add(new GroupReads.FilePart(current.toArray(new PartitionedFile[0])));
            return out.toArray(new InputPartition[0]);
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            UshasTable table = op.table;
            SparkSession spark = SparkSession.active();
            FileFormat format = UshasSource.fileFormat(table.answer().get("format").asText(), SQLConf.get());
            Map<String, String> options = readOptions(table);
            // the format's vectorized reader hands whole batches when it can (parquet, orc), as Spark's scans
            boolean columnar = format.supportBatch(spark, readSchema);
            options.put(FileFormat$.MODULE$.OPTION_RETURNING_BATCH(), String.valueOf(columnar));
            StructType constants = op.table.partitionSchema();
            if (withFile) constants = constants.add(FILE_COLUMN, DataTypes.LongType, false);
            scala.Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> read =
                    format.buildReaderWithPartitionValues(spark, dataSchema, constants, readDataSchema,
                            CollectionConverters.asScala(dataFilters).toList(), scalaMap(options),
                            hadoopConf(spark, table));
            return new GroupReads.Reader(read, columnar, skipped);
        }
    }

    private static Map<String, String> readOptions(UshasTable table) {
        Map<String, String> options = new HashMap<>();
        for (Map.Entry<String, String> e : table.properties().entrySet()) {
            if (e.getKey().startsWith("option.")) options.put(e.getKey().substring("option.".length()), e.getValue());
        }
        return options;
    }

    private static Configuration hadoopConf(SparkSession spark, UshasTable table) {
        return spark.sessionState().newHadoopConfWithOptions(scalaMap(readOptions(table)));
    }

    private static scala.collection.immutable.Map<String, String> scalaMap(Map<String, String> m) {
        return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(m));
    }
}
