package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.DelegatingTable;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsAtomicPartitionManagement;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.TruncatableTable;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import java.io.IOException;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A table of the catalog. Reads take Spark's V1 file path (a {@link DelegatingTable}: pruning,
 * pushdown) over the files the catalog lists ({@link UshasSource}, {@link UshasFileIndex}); every write is a V2 batch write ({@link UshasWrite}, through {@link #forWrite()} when
 * Spark resolves the table for writing); partition DDL goes to Python in one call per statement.
 */
public class UshasTable extends DelegatingTable
        implements SupportsWrite, SupportsAtomicPartitionManagement, TruncatableTable,
        org.apache.spark.sql.connector.catalog.SupportsRead {
    private final UshasCatalog catalog;
    private final Identifier ident;
    private final StructType partitionSchema;
    private final JsonNode answer;
    /** partition existence checks of one statement (ADD PARTITION checks each spec): after the first
     *  point lookup, the table's partition list is fetched once and kept for this table object, which
     *  Spark loads anew for every statement */
    private int existsCalls;
    private java.util.Set<String> known;

    /** The table's properties as users see them (the TableInfo's name UshasSource as the provider) */
    private final Map<String, String> properties;

    UshasTable(TableInfo info, Map<String, String> properties, String name, UshasCatalog catalog, Identifier ident,
               String[] partitionBy, JsonNode answer) {
        super(info, name);
        this.properties = java.util.Collections.unmodifiableMap(properties);
        this.catalog = catalog;
        this.ident = ident;
        this.answer = answer;
        List<String> cols = Arrays.asList(partitionBy);
        StructField[] fields = Arrays.stream(partitionBy)
                .map(c -> Arrays.stream(info.schema().fields()).filter(f -> f.name().equals(c)).findFirst()
                        .orElseThrow(() -> new IllegalStateException("partition column " + c + " not in schema")))
                .toArray(StructField[]::new);
        this.partitionSchema = new StructType(fields);
        assert cols.size() == fields.length;
    }

    UshasCatalog catalog() {
        return catalog;
    }

    Identifier ident() {
        return ident;
    }

    /** The table as Python described it (location, format, partition columns, write options). */
    JsonNode answer() {
        return answer;
    }

    /** The real format and options; Spark's V1 read description ({@link #getTableInfo()}) names
     *  {@link UshasSource} instead, so reads go through the catalog's file index. */
    @Override
    public Map<String, String> properties() {
        return properties;
    }

    @Override
    public Set<TableCapability> capabilities() {
        Set<TableCapability> caps = EnumSet.noneOf(TableCapability.class);
        caps.addAll(super.capabilities());
        caps.addAll(WRITE_CAPABILITIES);
        return caps;
    }

    /** A real V2 batch write ({@link UshasBatchWrite}): append, truncate, overwrite by partition
     *  filter and dynamic partition overwrite. */
    static final Set<TableCapability> WRITE_CAPABILITIES = EnumSet.of(TableCapability.BATCH_WRITE,
            TableCapability.TRUNCATE, TableCapability.OVERWRITE_BY_FILTER, TableCapability.OVERWRITE_DYNAMIC,
            TableCapability.STREAMING_WRITE);

    /**
     * The table as a write target. Spark turns a {@link DelegatingTable} it resolves by name into a V1
     * relation, and refuses V2 writes (DataFrameWriterV2) into that ("Cannot write into v1 table");
     * when it loads a table with write privileges (every INSERT / writeTo / insertInto), the catalog
     * answers this plain V2 table instead, so every write form reaches {@link UshasWrite}.
     */
    Target forWrite() {
        return new Target(this);
    }

    static final class Target implements SupportsWrite {
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
        public org.apache.spark.sql.connector.catalog.Column[] columns() {
            return table.columns();
        }

        @Override
        public org.apache.spark.sql.connector.expressions.Transform[] partitioning() {
            return table.partitioning();
        }

        @Override
        public Map<String, String> properties() {
            return table.properties();
        }

        @Override
        public Set<TableCapability> capabilities() {
            return WRITE_CAPABILITIES;
        }

        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            return table.newWriteBuilder(info);
        }
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return new UshasWrite.Builder(this, info);
    }

    // ---- partitions -------------------------------------------------------------------------------
    @Override
    public StructType partitionSchema() {
        return partitionSchema;
    }

    @Override
    public void createPartitions(InternalRow[] idents, Map<String, String>[] properties) {
        ObjectNode r = catalog.request(ident);
        ArrayNode parts = r.putArray("partitions");
        for (int i = 0; i < idents.length; i++) {
            ObjectNode p = parts.addObject();
            p.set("values", Rows.toJson(idents[i], partitionSchema));
            p.set("properties", Json.map(properties[i]));
        }
        catalog.call("add_partitions", r, ident, null);
        synchronized (this) {
            if (known != null) for (InternalRow row : idents) known.add(Rows.toJson(row, partitionSchema).toString());
        }
    }

    @Override
    public synchronized boolean partitionExists(InternalRow ident) {
        if (ident.numFields() != partitionSchema.length()) return SupportsAtomicPartitionManagement.super.partitionExists(ident);
        // checked calls ask each time: a writer (MODIFY) may ask whether a partition exists (ADD / DROP
        // PARTITION do), not list them all (SELECT)
        if (known == null && (existsCalls++ == 0 || catalog.checked())) {
            ObjectNode r = catalog.request(this.ident);
            r.set("values", Rows.toJson(ident, partitionSchema));
            return catalog.call("partition_exists", r, this.ident, null).get("exists").asBoolean();
        }
        if (known == null) {
            known = new java.util.HashSet<>();
            for (InternalRow row : listPartitionIdentifiers(new String[0], new org.apache.spark.sql.catalyst.expressions.GenericInternalRow(0))) {
                known.add(Rows.toJson(row, partitionSchema).toString());
            }
        }
        return known.contains(Rows.toJson(ident, partitionSchema).toString());
    }

    /**
     * Writes that remove rows (overwrites, TRUNCATE, DROP PARTITION) are refused to a user whose reads go
     * through a row filter: they would remove rows the user cannot see (docs/governance.md). Appends are
     * not filtered, as in Unity Catalog; the exempt principal's members overwrite as anyone.
     */
    void refuseRowRemoval(String what) {
        JsonNode p = UshasCatalog.policyOf(answer);
        if (p != null && (p.hasNonNull("row_filter") || p.path("refuse").asBoolean(false))) {
            throw Errors.sneak(Errors.analysis("USHAS_RowPolicy", what + " of table " + name() + " is refused: "
                    + "its row filter hides rows from user " + Json.text(p, "user") + ", which it would remove "
                    + "(append instead, or have a member of the filter's exempt principal do it)"));
        }
    }

    @Override
    public boolean dropPartitions(InternalRow[] idents) {
        refuseRowRemoval("ALTER TABLE DROP PARTITION");
        ObjectNode r = catalog.request(ident);
        r.set("partitions", Rows.rows(idents, partitionSchema));
        synchronized (this) {
            known = null;
        }
        return catalog.call("drop_partitions", r, ident, null).get("dropped").asBoolean();
    }

    @Override
    public boolean purgePartitions(InternalRow[] idents) {
        refuseRowRemoval("ALTER TABLE DROP PARTITION");
        ObjectNode r = catalog.request(ident);
        r.set("partitions", Rows.rows(idents, partitionSchema));
        r.put("purge", true);
        return catalog.call("drop_partitions", r, ident, null).get("dropped").asBoolean();
    }

    @Override
    public void replacePartitionMetadata(InternalRow partition, Map<String, String> properties) {
        ObjectNode r = catalog.request(ident);
        r.set("values", Rows.toJson(partition, partitionSchema));
        r.set("properties", Json.map(properties));
        catalog.call("replace_partition_metadata", r, ident, null);
    }

    @Override
    public Map<String, String> loadPartitionMetadata(InternalRow partition) {
        ObjectNode r = catalog.request(ident);
        r.set("values", Rows.toJson(partition, partitionSchema));
        return Json.toMap(catalog.call("load_partition", r, ident, null).get("metadata"));
    }

    @Override
    public InternalRow[] listPartitionIdentifiers(String[] names, InternalRow prefix) {
        InternalRow[] cached = names.length == 0 ? catalog.cache().partitions(this) : null;
        if (cached != null) return cached;  // this table is its identifier's current cache entry
        ObjectNode r = catalog.request(ident);
        StructField[] fields = Arrays.stream(names).map(n -> partitionSchema.apply(n)).toArray(StructField[]::new);
        r.set("values", Rows.toJson(prefix, fields));
        InternalRow[] out = Rows.fromAnswer(catalog.call("list_partitions", r, ident, null), partitionSchema);
        if (names.length == 0) catalog.cache().putPartitions(this, out);
        return out;
    }

    @Override
    public boolean truncatePartitions(InternalRow[] idents) {
        refuseRowRemoval("TRUNCATE TABLE");
        ObjectNode r = catalog.request(ident);
        r.set("partitions", Rows.rows(idents, partitionSchema));
        JsonNode answer = catalog.call("truncate", r, ident, null);
        clear(answer.get("clear_paths"));
        return answer.get("truncated").asBoolean();
    }

    @Override
    public boolean truncatePartition(InternalRow ident) {
        return truncatePartitions(new InternalRow[] {ident});
    }

    @Override
    public boolean truncateTable() {
        refuseRowRemoval("TRUNCATE TABLE");
        JsonNode answer = catalog.call("truncate", catalog.request(ident), ident, null);
        clear(answer.get("clear_paths"));
        catalog.invalidateTable(ident);
        return answer.get("truncated").asBoolean();
    }

    /**
     * ALTER TABLE ... RENAME TO. Python answers whether the data moves (a managed table at its
     * default location) without committing; the directory is moved, then the new name and location
     * are committed in one transaction. A failed move commits nothing; a failed commit moves the
     * directory back: either way the table keeps its old name and location.
     */
    static void rename(UshasCatalog catalog, Identifier from, Identifier to) {
        ObjectNode r = catalog.request(from);
        r.set("to", Json.strings(UshasCatalog.toParts(to)));
        JsonNode plan = catalog.call("rename_table", r, from, null);
        JsonNode move = plan.get("move");
        if (move == null || move.isNull()) return;
        Path src = new Path(move.get("from").asText());
        Path dst = new Path(move.get("to").asText());
        FileSystem fs;
        boolean moved = false;
        try {
            fs = src.getFileSystem(catalog.hadoopConf());
            if (fs.exists(src)) {
                if (fs.exists(dst)) {
                    throw Errors.invalidArgument("cannot rename " + from + " to " + to
                            + ": its new location " + dst + " already exists; the table keeps its name");
                }
                fs.mkdirs(dst.getParent());
                if (!fs.rename(src, dst)) {
                    throw new Errors.UshasBridgeException("Ushas catalog: moving " + src + " to " + dst
                            + " failed; the table keeps its name and location");
                }
                moved = true;
            }
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: moving " + src + " to " + dst + " failed: " + e
                    + "; the table keeps its name and location", e);
        }
        r.put("location", dst.toString());
        r.set("version", plan.get("version"));
        try {
            catalog.call("rename_table", r, from, null);
        } catch (RuntimeException e) {
            if (moved) {
                try {
                    fs.rename(dst, src);
                } catch (IOException back) {
                    e.addSuppressed(back);
                }
            }
            throw e;
        }
    }

    /** Removes the data files under each path, keeping the directories (TRUNCATE). */
    private void clear(JsonNode paths) {
        if (paths == null) return;
        for (JsonNode p : paths) {
            Path path = new Path(p.asText());
            try {
                FileSystem fs = path.getFileSystem(catalog.hadoopConf());
                if (!fs.exists(path)) continue;
                for (FileStatus s : fs.listStatus(path)) fs.delete(s.getPath(), true);
            } catch (IOException e) {
                throw new Errors.UshasBridgeException("Ushas catalog: truncating " + path + " failed: " + e, e);
            }
        }
    }

    // ---- statistics: DESC FORMATTED t column shows what analyze_table stored (UshasStatistics) -----------
    /** Only reports statistics: Spark reads a delegating table through its V1 file path, never this scan. */
    @Override
    public org.apache.spark.sql.connector.read.ScanBuilder newScanBuilder(
            org.apache.spark.sql.util.CaseInsensitiveStringMap options) {
        return UshasStatistics.scanBuilder(getTableInfo().schema(), properties());
    }
}
