package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.DataFrameWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsOverwrite;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.V1Write;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.InsertableRelation;

import java.io.IOException;

/**
 * Writes that reach the table through DataSource V2 (CTAS, REPLACE ... AS SELECT, saveAsTable, insertInto):
 * Spark's own file writer writes the data into the table location (so {@link UshasCommitProtocol} registers
 * the partitions); which partitions an overwrite replaces is decided in Python.
 */
final class UshasWrite implements V1Write, InsertableRelation {
    private final UshasTable table;
    private final String mode;
    private final Filter[] filters;

    private UshasWrite(UshasTable table, String mode, Filter[] filters) {
        this.table = table;
        this.mode = mode;
        this.filters = filters;
    }

    @Override
    public InsertableRelation toInsertableRelation() {
        return this;
    }

    @Override
    public void insert(Dataset<Row> data, boolean ignored) {
        UshasCatalog catalog = table.catalog();
        ObjectNode r = catalog.request(table.ident());
        r.put("mode", mode);
        ArrayNode fs = r.putArray("filters");
        if (filters != null) for (Filter f : filters) fs.add(Rows.filter(f));
        JsonNode plan = catalog.call("begin_write", r, table.ident(), null);  // deletes replaced partitions
        DataFrameWriter<Row> writer = data.write()
                .format(plan.get("format").asText())
                .options(Json.toMap(plan.get("options")))
                .partitionBy(Json.toStrings(plan.get("partition_by")))
                .mode("overwrite".equals(plan.get("save_mode").asText()) ? SaveMode.Overwrite : SaveMode.Append);
        writer.save(plan.get("location").asText());
        // partitions an overwrite cleared and this write did not fill again
        ObjectNode end = catalog.request(table.ident());
        ArrayNode gone = end.putArray("gone");
        for (JsonNode p : plan.get("cleared")) {
            Path path = new Path(p.get("location").asText());
            try {
                FileSystem fsys = path.getFileSystem(catalog.hadoopConf());
                if (!fsys.exists(path)) gone.add(p.get("values"));
            } catch (IOException e) {
                throw new Errors.UshasBridgeException("Ushas catalog: cannot check " + path + ": " + e, e);
            }
        }
        if (!gone.isEmpty()) catalog.call("end_write", end, table.ident(), null);
        catalog.invalidateTable(table.ident());
    }

    static final class Builder implements WriteBuilder, SupportsTruncate, SupportsOverwrite {
        private final UshasTable table;
        private String mode = "append";
        private Filter[] filters = new Filter[0];

        Builder(UshasTable table, LogicalWriteInfo info) {
            this.table = table;
        }

        @Override
        public WriteBuilder truncate() {
            mode = "truncate";
            return this;
        }

        @Override
        public WriteBuilder overwrite(Filter[] filters) {
            mode = "overwrite";
            this.filters = filters;
            return this;
        }

        @Override
        public Write build() {
            return new UshasWrite(table, mode, filters);
        }
    }
}
