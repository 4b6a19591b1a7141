import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.upper;

import java.util.List;

import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.Trigger;

/**
 * A plain Java Spark application for tests/capture/test_jvm_job.py: it never names ushas except in
 * SQL; the catalog and the lineage listener come from spark-submit's --conf only. It writes with
 * CTAS, saveAsTable, insertInto, writeTo of a checkpointed and saveAsTable of a locally checkpointed
 * DataFrame, and insertInto from a foreachBatch over a file stream; then it waits for the capture
 * (UshasLineageListener.flushAll, by reflection) and prints ushas.system.column_lineage as
 * "EDGE\ttarget_table\ttarget_column\tsource_table\tsource_column\tsubtype" lines.
 *
 * <p>Arguments: DATABASE CHECKPOINT_DIR STREAM_DIR STREAM_CHECKPOINT_DIR
 */
public final class LineageJob {
    private LineageJob() {}

    /** The query of the issue, written three ways. */
    static String query(String db) {
        return "SELECT order_id, amount * 2 AS dbl FROM ushas." + db + ".orders WHERE status = 'paid'";
    }

    public static void main(String[] args) throws Exception {
        String db = args[0];
        SparkSession spark = SparkSession.builder().appName("jvm-lineage-job").getOrCreate();
        spark.sparkContext().setCheckpointDir(args[1]);
        String u = "ushas." + db + ".";
        spark.sql("CREATE NAMESPACE ushas." + db);
        spark.sql("CREATE TABLE " + u + "orders (order_id BIGINT, amount DOUBLE, status STRING) USING parquet");
        spark.sql("INSERT INTO " + u + "orders VALUES (1, 2.0, 'paid'), (2, 3.0, 'open'), (3, -1.0, 'paid')");
        spark.sql("CREATE TABLE " + u + "inserted (order_id BIGINT, dbl DOUBLE) USING parquet");
        spark.sql("CREATE TABLE " + u + "fb (id BIGINT, label STRING) USING parquet");

        spark.sql("CREATE TABLE " + u + "ctas USING parquet AS " + query(db));           // SQL CTAS
        spark.sql("CREATE DATABASE spark_catalog." + db);
        spark.sql("USE spark_catalog." + db);
        spark.sql(query(db)).write().saveAsTable("saved");                                 // unqualified
        spark.sql(query(db)).write().insertInto(u + "inserted");

        Dataset<Row> source = spark.table(u + "orders").where("amount > 0")
                .select(col("order_id"), upper(col("status")).alias("st"));
        source.checkpoint().select("st", "order_id").writeTo(u + "ck").create();
        spark.table(u + "orders").groupBy("status").count().localCheckpoint(false).write().saveAsTable("lck");

        Dataset<Row> stream = spark.readStream().schema("value BIGINT, name STRING").option("maxFilesPerTrigger", 1)
                .json(args[2]).where("value > 0").selectExpr("value * 10 AS id", "upper(name) AS label");
        stream.writeStream()
                .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) ->
                        batch.write().mode("append").insertInto(u + "fb"))
                .option("checkpointLocation", args[3]).trigger(Trigger.AvailableNow()).start().awaitTermination();

        Object flushed = Class.forName("io.ushas.spark.UshasLineageListener")
                .getMethod("flushAll", long.class).invoke(null, 120_000L);
        System.out.println("FLUSHED " + flushed);
        List<Row> rows = spark.sql("SELECT target_table, target_column, source_table, source_column, subtype "
                + "FROM ushas.system.column_lineage").collectAsList();
        for (Row r : rows) {
            System.out.println("EDGE\t" + r.get(0) + "\t" + r.get(1) + "\t" + r.get(2) + "\t" + r.get(3) + "\t" + r.get(4));
        }
        System.out.println("ROWS " + spark.table(u + "fb").count());
        spark.stop();
    }
}
