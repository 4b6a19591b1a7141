package io.ushas.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.execution.streaming.Sink;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.sources.StreamSinkProvider;
import org.apache.spark.sql.streaming.OutputMode;
import scala.jdk.javaapi.CollectionConverters;

import java.util.List;

/**
 * {@code writeStream.format("ushas").start("ushas.db.t")} (or {@code .option("path", "ushas.db.t")} / {@code
 * .option("table", …)}): the format form of a stream into a catalog table. The name must be a table of an
 * ushas catalog; each micro-batch is that table's batch write with the query's id and the batch id
 * ({@code ushas.streamId} / {@code ushas.batchId}: committed once, as foreachBatch's idempotent writes),
 * appended (append mode) or replacing the table's rows (complete mode). {@code writeStream.toTable} reaches
 * the table's own streaming write ({@link UshasStreamingWrite}) instead; both commit each batch once.
 */
public final class UshasStreamSink implements StreamSinkProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "ushas";
    }

    @Override
    public Sink createSink(SQLContext sqlContext, scala.collection.immutable.Map<String, String> parameters,
                           scala.collection.immutable.Seq<String> partitionColumns, OutputMode outputMode) {
        String table = parameters.get("table").isDefined() ? parameters.get("table").get()
                : parameters.get("path").isDefined() ? parameters.get("path").get() : null;
        if (table == null || table.isBlank()) {
            throw Errors.invalidArgument("format ushas writes into a table of an ushas catalog: start(\"ushas.db.t\") "
                    + "or option(\"table\", \"ushas.db.t\")");
        }
        if (!partitionColumns.isEmpty()) {
            throw Errors.invalidArgument("format ushas: the table's partitioning is the catalog's; remove partitionBy("
                    + String.join(", ", CollectionConverters.asJava(partitionColumns)) + ")");
        }
        boolean complete = outputMode == OutputMode.Complete();
        if (!complete && outputMode != OutputMode.Append()) {
            throw Errors.invalidArgument("format ushas writes in append or complete mode, not " + outputMode);
        }
        SparkSession session = sqlContext.sparkSession();
        List<String> parts;
        try {
            parts = CollectionConverters.asJava(session.sessionState().sqlParser().parseMultipartIdentifier(table));
        } catch (org.apache.spark.sql.catalyst.parser.ParseException e) {
            throw Errors.invalidArgument("format ushas: " + table + " is not a table name: " + e.getMessage(), e);
        }
        CatalogPlugin catalog = parts.size() == 3 && session.sessionState().catalogManager().isCatalogRegistered(parts.get(0))
                ? session.sessionState().catalogManager().catalog(parts.get(0)) : null;
        if (!(catalog instanceof UshasCatalog)) {
            throw Errors.invalidArgument("format ushas writes into a table of an ushas catalog (catalog.database.table), "
                    + "not " + table);
        }
        return new TableSink(table, complete);
    }

    /** Each micro-batch: one idempotent batch write into the table. */
    static final class TableSink implements Sink {
        private final String table;
        private final boolean complete;

        TableSink(String table, boolean complete) {
            this.table = table;
            this.complete = complete;
        }

        @Override
        public void addBatch(long batchId, Dataset<Row> data) {
            org.apache.spark.sql.classic.SparkSession session = (org.apache.spark.sql.classic.SparkSession) data.sparkSession();
            String queryId = session.sparkContext().getLocalProperty("sql.streaming.queryId");
            if (queryId == null) {
                throw Errors.invalidArgument("format ushas: micro-batch " + batchId + " runs outside a streaming query");
            }
            // the batch's rows keep the streaming plan's attributes (as Spark's foreachBatch sink does), so the
            // lineage of this write reaches the stream's sources through the micro-batch's plan
            org.apache.spark.sql.classic.Dataset<Row> batch = (org.apache.spark.sql.classic.Dataset<Row>) data;
            org.apache.spark.sql.execution.LogicalRDD node = org.apache.spark.sql.execution.LogicalRDD$.MODULE$.fromDataset(
                    batch.queryExecution().toRdd(), batch, false,
                    org.apache.spark.sql.execution.LogicalRDD$.MODULE$.fromDataset$default$4());
            Dataset<Row> rows = org.apache.spark.sql.classic.Dataset$.MODULE$.ofRows(session, node);
            org.apache.spark.sql.DataFrameWriterV2<Row> w = rows.writeTo(table).option("ushas.streamId", queryId)
                    .option("ushas.batchId", String.valueOf(batchId));
            try {
                if (complete) w.overwrite(org.apache.spark.sql.functions.lit(true));
                else w.append();
            } catch (org.apache.spark.sql.catalyst.analysis.NoSuchTableException e) {
                throw Errors.sneak(e);
            }
        }

        /** What the micro-batch's plan names as its sink (Spark's Sink throws here): the lineage capture
         *  makes this sink's batch write the micro-batch's streaming-write run (lineage.micro_batches). */
        @Override
        public String name() {
            return toString();
        }

        @Override
        public String toString() {
            return "UshasStreamSink(" + table + (complete ? ", complete" : "") + ")";
        }
    }
}
