package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A table of an atomic CTAS / RTAS ({@code StagingTableCatalog}): {@code CREATE [OR REPLACE] TABLE … AS
 * SELECT}, {@code REPLACE TABLE … AS SELECT}, {@code writeTo(…).create() / replace() / createOrReplace()},
 * {@code saveAsTable} in overwrite mode. Staging creates nothing (Python plans the table and records the
 * staged write, {@code stage_table}); the query's write ({@link UshasBatchWrite} in staged mode) places
 * its files without registering them ({@link #written}); {@link #commitStagedChanges()} then drops the
 * replaced table, creates the new one and registers the files in ONE metastore transaction
 * ({@code commit_staged}, fenced by the write id). Until then readers see the previous state; a failed or
 * aborted statement removes the files and records the write ABORTED ({@code abort_staged}); what a
 * killed driver leaves is named by the staged write's entry, which {@code ushas purge} removes.
 */
final class UshasStagedTable implements StagedTable, SupportsWrite {
    private final UshasCatalog catalog;
    private final Identifier ident;
    private final String kind;
    private final ObjectNode definition;
    private final UshasTable table;
    private final String writeId;
    /** the batch write's registration request (written directories, files, rows), once it placed them */
    private volatile ObjectNode written;
    private final List<Path> placed = java.util.Collections.synchronizedList(new ArrayList<>());
    private volatile boolean ended;

    private UshasStagedTable(UshasCatalog catalog, Identifier ident, String kind, ObjectNode definition,
                             UshasTable table, String writeId) {
        this.catalog = catalog;
        this.ident = ident;
        this.kind = kind;
        this.definition = definition;
        this.table = table;
        this.writeId = writeId;
    }

    /** {@code kind}: create, replace, create_or_replace. */
    static UshasStagedTable stage(UshasCatalog catalog, Identifier ident, TableInfo info, String kind) {
        ObjectNode definition = Json.object();
        definition.put("schema", info.schema().json());
        ArrayNode parts = definition.putArray("partitioning");
        for (Transform t : info.partitions()) {
            ObjectNode p = parts.addObject().put("transform", t.name()).put("text", t.toString());
            ArrayNode cols = p.putArray("columns");
            for (NamedReference ref : t.references()) cols.add(String.join(".", ref.fieldNames()));
        }
        definition.set("properties", Json.map(info.properties()));
        ObjectNode r = catalog.request(ident);
        r.setAll(definition);
        r.put("kind", kind);
        r.put("write_id", java.util.UUID.randomUUID().toString());
        JsonNode answer = catalog.call("stage_table", r, ident, null);
        UshasTable planned = catalog.table(ident, answer.get("table"));
        return new UshasStagedTable(catalog, ident, kind, definition, planned, answer.get("write_id").asText());
    }

    static UshasStagedTable stage(UshasCatalog catalog, Identifier ident, Column[] columns, Transform[] partitions,
                                  Map<String, String> properties, String kind) {
        TableInfo info = new TableInfo.Builder().withProperties(properties).withColumns(columns)
                .withPartitions(partitions).build();
        return stage(catalog, ident, info, kind);
    }

    String writeId() {
        return writeId;
    }

    UshasTable target() {
        return table;
    }

    // ---- Table ------------------------------------------------------------------------------------
    @Override
    public String name() {
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

    @Override
    public Set<TableCapability> capabilities() {
        return UshasTable.WRITE_CAPABILITIES;
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return new UshasWrite.Builder(table, info).stagedBy(this);
    }

    // ---- the write's side -------------------------------------------------------------------------
    /** Before the write places files into the table's directories: they are added to the staged write's
     *  entry, so a driver killed after placing them leaves nothing that {@code ushas purge} does not know. */
    void placing(List<ObjectNode> files) {
        ObjectNode r = catalog.request(ident);
        r.put("write_id", writeId);
        ArrayNode out = r.putArray("files");
        files.forEach(out::add);
        catalog.call("stage_files", r, ident, null);
    }

    /** The write placed its files ({@code paths}); {@code request} says what it wrote (as {@code commit_write}
     *  would register it). */
    void written(ObjectNode request, List<Path> paths) {
        placed.addAll(paths);
        written = request;
    }

    // ---- StagedTable ------------------------------------------------------------------------------
    @Override
    public void commitStagedChanges() {
        ObjectNode r = catalog.request(ident);
        r.setAll(definition);
        r.put("kind", kind);
        r.put("write_id", writeId);
        r.put("location", table.answer().get("location").asText());
        r.put("deadline_ms", System.currentTimeMillis() + 1000L * catalog.bridgeOptions().timeoutSeconds());
        if (written != null) r.set("write", written);
        catalog.invalidateTable(ident);
        JsonNode answer;
        try {
            answer = Bridge.call("commit_staged", r, catalog.bridgeOptions());
        } catch (RuntimeException unknown) {
            String state = end("the commit_staged call failed: " + unknown.getMessage(), false);
            if ("COMMITTED".equals(state)) {
                finish();
                return;
            }
            if ("ABORTED".equals(state)) {
                abortStagedChanges();
                throw new Errors.UshasBridgeException("Ushas catalog: " + table.name() + " was not "
                        + (kind.equals("create") ? "created" : "replaced") + ": " + unknown.getMessage()
                        + "; write " + writeId + " is recorded ABORTED", unknown);
            }
            ended = true;  // unknown: keep the files (`ushas purge` removes them once the write is known over)
            throw new Errors.UshasBridgeException("Ushas catalog: " + table.name() + " (write id " + writeId
                    + ") may or may not have been committed: " + unknown.getMessage() + "; run `ushas write "
                    + writeId + "` to see what became of it", unknown);
        }
        JsonNode error = answer.get("error");
        if (error != null && !error.isNull()) {
            abortStagedChanges();
            throw Errors.toSpark(error, ident, null);
        }
        finish();
    }

    /** Committed: only the staging directory is left to remove. */
    private void finish() {
        ended = true;
        removeStaging();
        catalog.invalidateTable(ident);
    }

    @Override
    public void abortStagedChanges() {
        if (ended) return;
        ended = true;
        boolean removed = true;
        synchronized (placed) {
            for (Path p : placed) {
                try {
                    FileSystem fs = p.getFileSystem(catalog.hadoopConf());
                    fs.delete(p, false);
                } catch (IOException e) {
                    removed = false;  // `ushas purge` removes it: the staged entry names it
                }
            }
        }
        removed &= removeListed() & removeStaging();
        end("Spark aborted the statement", removed);
        catalog.invalidateTable(ident);
    }

    /** A direct write's files not yet placed (its manifests in the staging directory list them). */
    private boolean removeListed() {
        Path root = new Path(table.answer().get("location").asText());
        try {
            FileSystem fs = root.getFileSystem(catalog.hadoopConf());
            DirectCommitProtocol.removeListed(fs, Staging.path(root, writeId));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private boolean removeStaging() {
        Path root = new Path(table.answer().get("location").asText());
        try {
            FileSystem fs = root.getFileSystem(catalog.hadoopConf());
            Path staging = Staging.path(root, writeId);
            if (fs.exists(staging)) Staging.remove(fs, staging);
            return !fs.exists(staging);
        } catch (IOException e) {
            return false;
        }
    }

    /** {@code abort_staged}: the write's state after it (COMMITTED / ABORTED), null if unknown. */
    private String end(String reason, boolean filesRemoved) {
        ObjectNode r = catalog.request(ident);
        r.put("write_id", writeId);
        r.put("reason", reason);
        r.put("files_removed", filesRemoved);
        try {
            JsonNode answer = Bridge.call("abort_staged", r, catalog.bridgeOptions());
            JsonNode state = answer.get("state");
            return state == null || state.isNull() ? null : state.asText();
        } catch (RuntimeException e) {
            return null;
        }
    }

    @Override
    public String toString() {
        return "UshasStagedTable(" + table.name() + ", " + kind + ", write " + writeId + ")";
    }
}
