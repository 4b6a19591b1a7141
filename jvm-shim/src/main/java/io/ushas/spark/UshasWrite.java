package io.ushas.spark;

import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.distributions.Distributions;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering;
import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsOverwrite;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.sources.AlwaysTrue;
import org.apache.spark.sql.sources.Filter;

import java.util.Arrays;
import java.util.List;

/**
 * Every write into a table of the catalog (SQL INSERT in all its forms, {@code insertInto},
 * {@code saveAsTable}, {@code writeTo(...)}, CTAS / RTAS) as a DataSource V2 batch write. Spark's own
 * file writers write the files ({@link UshasBatchWrite}); the kind of write (append, truncate,
 * overwrite by partition filter, dynamic partition overwrite) is passed to Python at commit, which
 * decides which partitions are replaced.
 */
final class UshasWrite implements Write, RequiresDistributionAndOrdering {
    private final UshasTable table;
    private final LogicalWriteInfo info;
    private final String mode;
    private final Filter[] filters;
    /** the staged table of an atomic CTAS / RTAS whose commit registers this write, or null */
    private final UshasStagedTable staged;
    /** a row-level rewrite: the files it replaces, known once its scan ran (null: not one) */
    private final java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> replacing;

    /** a MERGE planned as {@link MergeProbe}: the rows written after its tasks, known once it ran (null: not one) */
    private final java.util.function.Supplier<MergeLateRows> late;

    private UshasWrite(UshasTable table, LogicalWriteInfo info, String mode, Filter[] filters,
                       UshasStagedTable staged,
                       java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> replacing,
                       java.util.function.Supplier<MergeLateRows> late) {
        this.late = late;
        this.table = table;
        this.info = info;
        this.mode = mode;
        this.filters = filters;
        this.staged = staged;
        this.replacing = replacing;
    }

    @Override
    public String description() {
        return "ushas " + table.answer().get("format").asText() + " " + mode;
    }

    /** The table property that clusters a partitioned table's written rows by partition (Iceberg's name and
     *  values: {@code hash} or {@code none}). Unset, a write into a partitioned table is clustered ({@code
     *  hash}, Iceberg's default: one file per partition instead of one per task and partition) and a
     *  row-level rewrite (DELETE / UPDATE / MERGE, which rewrites a few files where they are) is not. A query
     *  that fails in the shuffle never reaches the write's abort, and leaves nothing: the write's staging
     *  directory is made only when its job starts ({@link UshasBatchWrite}'s {@code prepare}). */
    static final String DISTRIBUTION_MODE = "write.distribution-mode";

    /** A bucketed table's rows are clustered by the bucket columns into exactly as many tasks as buckets
     *  (Spark's hash partitioning: task i holds bucket i, as Spark's own bucketed writes compute it). A
     *  partitioned table with {@code write.distribution-mode=hash} has its rows clustered by the partition
     *  columns (Iceberg's {@code hash} mode, the default): each partition is written by one task, so a write of N
     *  partitions makes N files, not N per task (Spark may still split a skewed partition or merge small
     *  ones: not strictly required). */
    @Override
    public Distribution requiredDistribution() {
        Bucketing b = Bucketing.of(table.answer());
        if (b != null) {
            return Distributions.clustered(Arrays.stream(b.columns).map(Expressions::column)
                    .toArray(org.apache.spark.sql.connector.expressions.Expression[]::new));
        }
        if (!clusteredByPartition()) return Distributions.unspecified();
        return Distributions.clustered(Arrays.stream(table.partitionSchema().fieldNames()).map(Expressions::column)
                .toArray(org.apache.spark.sql.connector.expressions.Expression[]::new));
    }

    private boolean clusteredByPartition() {
        if (table.partitionSchema().isEmpty()) return false;
        String mode = table.properties().get(DISTRIBUTION_MODE);
        if (mode == null) return replacing == null;
        return "hash".equalsIgnoreCase(mode.trim());
    }

    /** Only a bucketed table needs its distribution exactly (a bucket per task). */
    @Override
    public boolean distributionStrictlyRequired() {
        return Bucketing.of(table.answer()) != null;
    }

    @Override
    public int requiredNumPartitions() {
        Bucketing b = Bucketing.of(table.answer());
        return b == null ? 0 : b.numBuckets;
    }

    /** Rows sorted by the partition columns within each task: one open file per task at a time; then, in a
     *  bucketed table, by its sort columns (SORTED BY). */
    @Override
    public SortOrder[] requiredOrdering() {
        Bucketing b = Bucketing.of(table.answer());
        return java.util.stream.Stream.concat(Arrays.stream(table.partitionSchema().fieldNames()),
                        b == null ? java.util.stream.Stream.<String>empty() : Arrays.stream(b.sortColumns))
                .map(c -> Expressions.sort(Expressions.column(c), SortDirection.ASCENDING))
                .toArray(SortOrder[]::new);
    }

    /** {rows, bytes, files} of this write's registered commit (for the lineage listener), or null. */
    private volatile long[] committed;

    long[] committed() {
        return committed;
    }

    void committed(long rows, long bytes, long files) {
        committed = new long[] {rows, bytes, files};
    }

    /** A streaming query's writes, a micro-batch at a time ({@link UshasStreamingWrite}): append, or
     *  complete mode (truncate: each batch replaces the table's rows). */
    @Override
    public org.apache.spark.sql.connector.write.streaming.StreamingWrite toStreaming() {
        if (!"append".equals(mode) && !"truncate".equals(mode)) {
            throw Errors.invalidArgument("a streaming write into " + table.name() + " appends (output mode append) "
                    + "or replaces the table's rows (complete), not " + mode);
        }
        return new UshasStreamingWrite(table, info, mode, this);
    }

    @Override
    public BatchWrite toBatch() {
        return UshasBatchWrite.create(table, info, mode, filters, staged).replacing(replacing).withLateRows(late)
                .reportingTo(this);
    }

    static final class Builder implements WriteBuilder, SupportsTruncate, SupportsOverwrite, SupportsDynamicOverwrite {
        private final UshasTable table;
        private final LogicalWriteInfo info;
        private String mode = "append";
        private Filter[] filters = new Filter[0];
        private UshasStagedTable staged;
        private java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> replacing;
        private java.util.function.Supplier<MergeLateRows> late;

        /** A MERGE planned as {@link MergeProbe}: the rows its commit writes after its tasks. */
        Builder withLateRows(java.util.function.Supplier<MergeLateRows> late) {
            this.late = late;
            return this;
        }

        Builder(UshasTable table, LogicalWriteInfo info) {
            this.table = table;
            this.info = info;
        }

        /** The write of an atomic CTAS / RTAS: {@code staged}'s commit registers it. */
        Builder stagedBy(UshasStagedTable staged) {
            this.staged = staged;
            return this;
        }

        /** A row-level rewrite (UshasRowLevel): the commit replaces exactly the files {@code replacing} names
         *  when the job ends (by partition: {@code [{"values": {...}, "files": [path, ...]}]}). */
        Builder replacingFiles(java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> replacing) {
            mode = "replace_files";
            filters = new Filter[0];
            this.replacing = replacing;
            return this;
        }

        @Override
        public WriteBuilder truncate() {
            mode = "truncate";
            filters = new Filter[0];
            return this;
        }

        /** Refused here, before anything is written: a condition on data columns (and so any condition
         *  but {@code true} on an unpartitioned table): an overwrite replaces whole partitions. */
        @Override
        public boolean canOverwrite(Filter[] filters) {
            List<String> partitionColumns = Arrays.asList(table.partitionSchema().fieldNames());
            for (Filter f : filters) {
                if (f instanceof AlwaysTrue) continue;
                for (String ref : f.references()) {
                    if (partitionColumns.stream().noneMatch(c -> c.equalsIgnoreCase(ref))) {
                        throw Errors.invalidArgument("cannot overwrite " + table.name()
                                + " where " + f + ": an overwrite condition may use only the partition columns ("
                                + (partitionColumns.isEmpty() ? "none: the table is unpartitioned, overwrite it whole"
                                   : String.join(", ", partitionColumns)) + ")");
                    }
                }
            }
            return true;
        }

        @Override
        public WriteBuilder overwrite(Filter[] filters) {
            mode = "overwrite";
            this.filters = filters;
            return this;
        }

        @Override
        public WriteBuilder overwriteDynamicPartitions() {
            mode = "dynamic";
            filters = new Filter[0];
            return this;
        }

        @Override
        public Write build() {
            if (!"append".equals(mode) && staged == null) table.refuseRowRemoval("INSERT OVERWRITE");
            return new UshasWrite(table, info, mode, filters, staged, replacing, late);
        }
    }
}
