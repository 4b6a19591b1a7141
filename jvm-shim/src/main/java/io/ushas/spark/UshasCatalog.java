package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.QualifiedTableName;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.Relation;
import org.apache.spark.sql.connector.catalog.RelationCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.TableSummary;
import org.apache.spark.sql.connector.catalog.View;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The Spark catalog plugin: {@code spark.sql.catalog.<name>=io.ushas.spark.UshasCatalog}. Thin: every
 * method is one JSON request to Python ({@code ushas_catalog.spark_ops}) and builds Spark objects from the
 * answer. Options: {@code uri} (required), {@code project} (default {@code default}), {@code catalog}
 * (default: the Spark catalog name), {@code warehouse}, {@code bridge.timeout} (seconds per call,
 * default 60), {@code bridge.livenessTimeout}, {@code python}, {@code bridge} ({@code auto} | {@code pyspark}):
 * see {@link Bridge.BridgeOptions#of}; {@code cache.enabled}, {@code cache.ttl},
 * {@code cache.size}, {@code cache.check} (see {@link RelationCache}; Python parses them).
 */
public class UshasCatalog implements RelationCatalog, SupportsNamespaces,
        org.apache.spark.sql.connector.catalog.ProcedureCatalog,
        org.apache.spark.sql.connector.catalog.StagingTableCatalog,
        org.apache.spark.sql.connector.catalog.FunctionCatalog {
    static final String COMMIT_PROTOCOL_CONF = "spark.sql.sources.commitProtocolClass";
    static final String DEFAULT_COMMIT_PROTOCOL =
            "org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol";

    private String name;
    private ObjectNode context;
    private Bridge.BridgeOptions bridgeOptions;
    private Configuration hadoopConf;
    private RelationCache cache = new RelationCache(RelationCache.Settings.fromJson(null));
    /** remote mode: the ops the JVM sends the service itself (null: every op goes through Python) */
    private RemoteTransport transport;
    /** ops that change nothing: every other op on an identifier drops its cache entry */
    private static final java.util.Set<String> READS = java.util.Set.of("load_relation", "load_table",
            "relation_exists", "list_partitions", "partition_exists", "load_partition", "list_files", "table_size",
            "stream_latest", "stream_batch");

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
        SparkSession session = SparkSession.active();
        DeployedOptions.check(name, session);  // before anything is launched or opened (docs/governance.md)
        String uri = options.get("uri");
        if (uri == null || uri.isBlank()) {
            throw Errors.invalidArgument("spark.sql.catalog." + name
                    + ".uri is required (e.g. sqlite:///path/ushas.db, fdb:///etc/foundationdb/fdb.cluster or the "
                    + "catalog service's http(s)://host:port)");
        }
        context = Json.object();
        context.put("uri", uri);
        context.put("project", options.getOrDefault("project", "default"));
        context.put("catalog", options.getOrDefault("catalog", name));
        context.put("branch", options.getOrDefault("branch", "main"));  // docs/branches.md
        // whether a missing store may be created; unset: Python decides (never in configuration-only mode)
        if (options.containsKey("create")) context.put("create", Boolean.parseBoolean(options.get("create")));
        context.put("spark_catalog", name);
        String warehouse = options.get("warehouse");
        if (warehouse == null) {
            warehouse = session.conf().get("spark.sql.warehouse.dir", "spark-warehouse") + "/" + name;
        }
        hadoopConf = session.sessionState().newHadoopConf();
        context.put("warehouse", qualify(warehouse));
        Identity.describe(context, options, session);  // user, authorization (docs/governance.md)
        RemoteOptions.describe(context, options);  // http(s):// uri: the service's token (docs/service.md)
        bridgeOptions = Bridge.BridgeOptions.of(name, options::get, k -> session.conf().get(k, null));
        // partitions written by Spark's file writer are registered by the commit protocol
        String protocol = session.conf().get(COMMIT_PROTOCOL_CONF, DEFAULT_COMMIT_PROTOCOL);
        if (DEFAULT_COMMIT_PROTOCOL.equals(protocol)) {
            session.conf().set(COMMIT_PROTOCOL_CONF, UshasCommitProtocol.class.getName());
        }
        ObjectNode open = request();
        ObjectNode cacheOptions = open.putObject("cache_options");
        for (Map.Entry<String, String> o : options.entrySet()) {
            if (o.getKey().toLowerCase(java.util.Locale.ROOT).startsWith("cache.")) {
                cacheOptions.put(o.getKey(), o.getValue());
            }
        }
        JsonNode opened = call("open", open, null, null);
        cache = new RelationCache(RelationCache.Settings.fromJson(opened.get("cache")));
        transport = RemoteTransport.of(opened.get("transport"));  // remote mode: Python lists the direct ops
        PathReads.initialized(session, this);  // this session's path reads are checked by it (when governed)
    }

    RelationCache cache() {
        return cache;
    }

    /** Remote mode's direct transport as JSON, for tests and benchmarks: {@code {"direct": false}} without
     *  one, else its calls and their time ({@code RemoteTransport#status}). */
    public String transportStatus() {
        RemoteTransport t = transport;
        return t == null ? "{\"direct\":false}" : "{\"direct\":true," + t.status().substring(1);
    }

    /** The cache's settings, entries and lookup counts as JSON ({@code unchanged}, {@code unchecked},
     *  {@code loaded}): for tests and benchmarks. */
    public String cacheStatus() {
        return cache.status();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String[] defaultNamespace() {
        return new String[] {"default"};
    }

    // ---- transport --------------------------------------------------------------------------------
    ObjectNode request() {
        ObjectNode r = Json.object();
        r.set("ctx", context);
        return r;
    }

    ObjectNode request(Identifier ident) {
        ObjectNode r = request();
        r.set("namespace", Json.strings(ident.namespace()));
        r.put("name", ident.name());
        return r;
    }

    ObjectNode request(String[] namespace) {
        ObjectNode r = request();
        r.set("namespace", Json.strings(namespace));
        return r;
    }

    /** One round trip; a Python error becomes the matching Spark exception. */
    JsonNode call(String op, ObjectNode request, Identifier ident, String[] namespace) {
        if (ident != null && !READS.contains(op)) cache.invalidate(ident);
        RemoteTransport t = transport;
        JsonNode answer = t != null && t.serves(op) ? t.call(op, request, bridgeOptions)
                : Bridge.call(op, request, bridgeOptions);
        JsonNode error = answer.get("error");
        if (error != null && !error.isNull()) throw Errors.toSpark(error, ident, namespace);
        deletePaths(answer.get("delete_paths"));
        return answer;
    }

    /** This catalog's bridge options (the writes' deadlines: now + {@code bridge.timeout}). */
    Bridge.BridgeOptions bridgeOptions() {
        return bridgeOptions;
    }

    Configuration hadoopConf() {
        return hadoopConf;
    }

    String qualify(String location) {
        try {
            Path p = new Path(location);
            return p.getFileSystem(hadoopConf).makeQualified(p).toString();
        } catch (IOException e) {
            throw Errors.invalidArgument("invalid location " + location + ": " + e, e);
        }
    }

    /** Data removal Python asked for after its metadata commit (dropped managed tables, partitions). */
    void deletePaths(JsonNode paths) {
        if (paths == null || paths.isNull()) return;
        for (JsonNode p : paths) {
            Path path = new Path(p.asText());
            try {
                FileSystem fs = path.getFileSystem(hadoopConf);
                if (fs.exists(path)) fs.delete(path, true);
            } catch (IOException e) {
                throw new Errors.UshasBridgeException("Ushas catalog: metadata committed but deleting " + path
                        + " failed: " + e.getMessage(), e);
            }
        }
    }

    // ---- namespaces -------------------------------------------------------------------------------
    @Override
    public String[][] listNamespaces() {
        return namespaces(call("list_namespaces", request(new String[0]), null, new String[0]));
    }

    @Override
    public String[][] listNamespaces(String[] namespace) {
        return namespaces(call("list_namespaces", request(namespace), null, namespace));
    }

    private static String[][] namespaces(JsonNode answer) {
        List<String[]> out = new ArrayList<>();
        for (JsonNode ns : answer.get("namespaces")) out.add(Json.toStrings(ns));
        return out.toArray(new String[0][]);
    }

    @Override
    public boolean namespaceExists(String[] namespace) {
        return call("namespace_exists", request(namespace), null, namespace).get("exists").asBoolean();
    }

    @Override
    public Map<String, String> loadNamespaceMetadata(String[] namespace) {
        return Json.toMap(call("load_namespace", request(namespace), null, namespace).get("metadata"));
    }

    @Override
    public void createNamespace(String[] namespace, Map<String, String> metadata) {
        ObjectNode r = request(namespace);
        r.set("metadata", Json.map(metadata));
        call("create_namespace", r, null, namespace);
    }

    @Override
    public void alterNamespace(String[] namespace, NamespaceChange... changes) {
        ObjectNode r = request(namespace);
        ArrayNode out = r.putArray("changes");
        for (NamespaceChange c : changes) {
            if (c instanceof NamespaceChange.SetProperty s) {
                out.addObject().put("kind", "SetProperty").put("property", s.property()).put("value", s.value());
            } else if (c instanceof NamespaceChange.RemoveProperty rm) {
                out.addObject().put("kind", "RemoveProperty").put("property", rm.property());
            } else {
                throw Errors.invalidArgument("unsupported namespace change " + c);
            }
        }
        call("alter_namespace", r, null, namespace);
    }

    @Override
    public boolean dropNamespace(String[] namespace, boolean cascade) {
        ObjectNode r = request(namespace);
        r.put("cascade", cascade);
        return call("drop_namespace", r, null, namespace).get("dropped").asBoolean();
    }

    // ---- relations --------------------------------------------------------------------------------
    @Override
    public Relation loadRelation(Identifier ident) {
        return load("load_relation", ident);
    }

    @Override
    public Table loadTable(Identifier ident) {
        return (Table) load("load_table", ident);
    }

    /** {@code VERSION AS OF n | 'tag'} and {@code versionAsOf}: the table as of that version
     *  ({@link #tableAsOf}). */
    @Override
    public Table loadTable(Identifier ident, String version) {
        return tableAsOf(ident, request(ident).put("version", version));
    }

    /** {@code TIMESTAMP AS OF ts} and {@code timestampAsOf} (microseconds since the epoch): the
     *  version current at that time. */
    @Override
    public Table loadTable(Identifier ident, long timestamp) {
        return tableAsOf(ident, request(ident).put("timestamp", timestamp));
    }

    /**
     * A table as of a version: its schema and properties then, read through the current row filter
     * and masks, whose file index lists exactly that version's files (the {@code as_of} of every
     * listing). Not cached: each statement asks, so a purge in between is seen.
     */
    private Table tableAsOf(Identifier ident, ObjectNode r) {
        if (UshasRowsTable.handles(ident)) {
            throw Errors.invalidArgument(name + "." + String.join(".", toParts(ident))
                    + " is a metadata or system table: it cannot be read as of a version");
        }
        JsonNode answer = call("load_table_as_of", r, ident, null);
        return table(ident, answer.get("table"));
    }

    /**
     * One round trip. With a live cache entry Python checks its id and version in one small transaction:
     * {@code unchanged} keeps the entry (its Table, partition identifiers and Spark's cached relation with
     * its file listing); otherwise the answer is the fresh relation. {@code cache.check=false} serves a live
     * entry without asking.
     */
    private Relation load(String op, Identifier ident) {
        if (UshasRowsTable.handles(ident)) return UshasRowsTable.load(this, ident);  // metadata, system tables
        RelationCache.Entry e = cache.get(ident);
        if (e != null && "load_table".equals(op) && !(e.relation instanceof Table)) e = null;
        // a table read through a row filter or masks: Python also checks the policy still applies as cached
        // (the user's roles decide what it reads)
        boolean hasPolicy = e != null && e.relation instanceof UshasTable u && u.answer().path("has_policy").asBoolean();
        if (e != null && !cache.settings().check() && !hasPolicy) {
            cache.count("unchecked");
            return e.relation;
        }
        ObjectNode r = request(ident);
        if (e != null) {
            ObjectNode known = r.putObject("known").put("id", e.id).put("version", e.version);
            if (hasPolicy) {
                JsonNode applied = policyOf(((UshasTable) e.relation).answer());
                known.put("policy", applied == null ? "null" : applied.toString());
            }
        }
        JsonNode answer = call(op, r, ident, null);
        if (e != null && answer.path("unchanged").asBoolean(false)) {
            cache.count("unchanged");
            return e.relation;
        }
        cache.count("loaded");
        Relation rel = "view".equals(Json.text(answer, "kind")) ? view(answer.get("view"))
                : table(ident, answer.get("table"));
        cache.put(ident, Json.text(answer, "id"), answer.path("version").asLong(), rel);
        return rel;
    }

    /** Whether this catalog's calls are checked ({@code authorization=true}, docs/governance.md; a remote catalog's
     *  always are: the service runs them as its token's user, docs/service.md). */
    boolean checked() {
        return Identity.checked(context) || context.has("remote");
    }

    /** Loaded for writing (INSERT, insertInto, writeTo): a plain V2 table, so Spark plans a V2 write
     *  instead of refusing a V1 relation; see {@link UshasTable#forWrite()}. */
    @Override
    public Table loadTable(Identifier ident, java.util.Set<org.apache.spark.sql.connector.catalog.TableWritePrivilege> privileges) {
        if (Identity.checked(context)) call("check_write", request(ident), ident, null);
        Table t = loadTable(ident);
        JsonNode refused = t instanceof UshasTable u ? u.answer().get("write_error") : null;  // a shared table
        if (refused != null && !refused.isNull()) throw Errors.toSpark(refused, ident, null);
        // DELETE / UPDATE / MERGE (and INSERT) plan against a row-level target (UshasRowLevel)
        return t instanceof UshasTable u ? new UshasRowLevel.Target(u) : t;
    }

    @Override
    public boolean tableExists(Identifier ident) {
        return call("relation_exists", request(ident).put("kind", "table"), ident, null).get("exists").asBoolean();
    }

    @Override
    public boolean viewExists(Identifier ident) {
        return call("relation_exists", request(ident).put("kind", "view"), ident, null).get("exists").asBoolean();
    }

    @Override
    public TableSummary[] listRelationSummaries(String[] namespace) {
        JsonNode answer = call("list_relations", request(namespace), null, namespace);
        List<TableSummary> out = new ArrayList<>();
        for (JsonNode r : answer.get("relations")) {
            out.add(TableSummary.of(Identifier.of(namespace, r.get("name").asText()), r.get("type").asText()));
        }
        return out.toArray(new TableSummary[0]);
    }

    @Override
    public TableSummary[] listTableSummaries(String[] namespace) {
        List<TableSummary> out = new ArrayList<>();
        for (TableSummary s : listRelationSummaries(namespace)) {
            if (!TableSummary.VIEW_TABLE_TYPE.equals(s.tableType())) out.add(s);
        }
        return out.toArray(new TableSummary[0]);
    }

    @Override
    public Identifier[] listTables(String[] namespace) {
        return idents(namespace, call("list_relations", request(namespace).put("kind", "table"), null, namespace));
    }

    @Override
    public Identifier[] listViews(String[] namespace) {
        return idents(namespace, call("list_relations", request(namespace).put("kind", "view"), null, namespace));
    }

    private static Identifier[] idents(String[] namespace, JsonNode answer) {
        List<Identifier> out = new ArrayList<>();
        for (JsonNode r : answer.get("relations")) out.add(Identifier.of(namespace, r.get("name").asText()));
        return out.toArray(new Identifier[0]);
    }

    // ---- tables -----------------------------------------------------------------------------------
    @Override
    public Table createTable(Identifier ident, TableInfo info) {
        ObjectNode r = request(ident);
        r.put("schema", info.schema().json());
        ArrayNode parts = r.putArray("partitioning");
        for (Transform t : info.partitions()) {
            ObjectNode p = parts.addObject().put("transform", t.name()).put("text", t.toString());
            ArrayNode cols = p.putArray("columns");
            for (NamedReference ref : t.references()) cols.add(String.join(".", ref.fieldNames()));
        }
        r.set("properties", Json.map(info.properties()));
        return table(ident, call("create_table", r, ident, null).get("table"));
    }

    @Override
    public Table alterTable(Identifier ident, TableChange... changes) {
        ObjectNode r = request(ident);
        r.set("changes", TableChanges.toJson(changes));
        return table(ident, call("alter_table", r, ident, null).get("table"));
    }

    @Override
    public boolean dropTable(Identifier ident) {
        invalidateTable(ident);
        return call("drop_table", request(ident).put("purge", false), ident, null).get("dropped").asBoolean();
    }

    /**
     * {@code DROP TABLE [IF EXISTS] [PURGE]} in one round trip ({@link DropTableExec}): Python answers it as the
     * calls Spark's own DropTableExec makes one by one ({@code relation_exists} of the table; then
     * {@code drop_table}, or for a missing table {@code relation_exists} of a view), each as if sent alone.
     * When the table existed, {@code uncache} runs (Spark's uncaching of the table's cached data) and this
     * catalog's entries go, whether or not the drop succeeded (as with Spark's order: uncache, then drop);
     * then a failed call's error is thrown as {@link #call} throws it. The answer: {@code exists} (the table did,
     * and is dropped), {@code view} (no table, but a view of that name).
     */
    JsonNode dropTableStatement(Identifier ident, boolean purge, Runnable uncache) {
        cache.invalidate(ident);
        JsonNode answer = Bridge.call("drop_table_statement", request(ident).put("purge", purge), bridgeOptions);
        if (answer.path("exists").asBoolean(false)) {
            uncache.run();
            invalidateTable(ident);
        }
        JsonNode error = answer.get("error");
        if (error != null && !error.isNull()) throw Errors.toSpark(error, ident, null);
        deletePaths(answer.get("delete_paths"));
        return answer;
    }

    @Override
    public boolean purgeTable(Identifier ident) {
        invalidateTable(ident);
        return call("drop_table", request(ident).put("purge", true), ident, null).get("dropped").asBoolean();
    }

    @Override
    public void renameTable(Identifier from, Identifier to) {
        invalidateTable(from);
        UshasTable.rename(this, from, to);
    }

    @Override
    public void invalidateTable(Identifier ident) {
        cache.invalidate(ident);
        String[] ns = ident.namespace();
        SparkSession.getActiveSession().foreach(s -> {
            s.sessionState().catalog().invalidateCachedTable(
                    new QualifiedTableName(name, ns.length == 1 ? ns[0] : String.join(".", ns), ident.name()));
            return null;
        });
    }

    static String[] toParts(Identifier ident) {
        String[] out = new String[ident.namespace().length + 1];
        System.arraycopy(ident.namespace(), 0, out, 0, ident.namespace().length);
        out[out.length - 1] = ident.name();
        return out;
    }

    /** A table answer from Python -> the Spark table. Spark's V1 file path reads it. */
    UshasTable table(Identifier ident, JsonNode t) {
        // the relation Spark caches per session lists files once: drop it so every query sees fresh data
        invalidateTable(ident);
        StructType schema = (StructType) DataType.fromJson(t.get("schema").asText());
        String[] partitionBy = Json.toStrings(t.get("partition_by"));
        Transform[] transforms = Bucketing.transforms(partitionBy, t);  // identity(partition columns), bucket
        Map<String, String> props = Json.toMap(t.get("properties"));
        // what Spark turns into its V1 relation: the same table, read through UshasSource (the
        // catalog's file index); users see `props` (UshasTable.properties), with the real format
        String location = qualify(props.get(TableCatalog_PROP_LOCATION));
        Map<String, String> readProps = new java.util.HashMap<>(props);
        readProps.put(org.apache.spark.sql.connector.catalog.TableCatalog.PROP_PROVIDER, UshasSource.class.getName());
        UshasSource.options(name, ident, t.get("format").asText(), partitionBy, location)
                .forEach((k, v) -> readProps.put(org.apache.spark.sql.connector.catalog.TableCatalog.OPTION_PREFIX + k, v));
        if (t.hasNonNull("as_of")) {  // a read as of a version: the file index lists that version's files
            readProps.put(org.apache.spark.sql.connector.catalog.TableCatalog.OPTION_PREFIX + UshasSource.AS_OF,
                    t.get("as_of").asText());
        }
        if (Bucketing.option(t) != null) {
            readProps.put(org.apache.spark.sql.connector.catalog.TableCatalog.OPTION_PREFIX + Bucketing.OPTION, Bucketing.option(t));
        }
        JsonNode policy = policyOf(t);
        policies.put(ident, policy == null ? NO_POLICY : policy);
        TableInfo info = new TableInfo.Builder()
                .withProperties(readProps)  // first: it replaces the whole map
                .withSchema(schema)
                .withPartitions(transforms)
                .build();
        UshasTable table = new UshasTable(info, props, name + "." + String.join(".", toParts(ident)), this, ident,
                partitionBy, t);
        UshasCommitProtocol.track(location, this, ident);
        return table;
    }

    /** The row filter and masks this catalog's user reads each table through, as its last answer said
     *  ({@link #table}); {@link UshasSource} asks here, never the read options a user could write. */
    private final java.util.Map<Identifier, JsonNode> policies = new java.util.concurrent.ConcurrentHashMap<>();
    private static final JsonNode NO_POLICY = Json.object();

    /** What a relation of table {@code ident} applies ({@link RowPolicies}; null: nothing), loading the
     *  table when this catalog has not answered it yet (a read that names {@link UshasSource} itself). */
    JsonNode policyFor(Identifier ident) {
        JsonNode p = policies.get(ident);
        if (p == null) {
            loadTable(ident);
            p = policies.get(ident);
        }
        if (p == null) return Json.object().put("refuse", true);
        return p == NO_POLICY ? null : p;
    }

    /** The row filter and masks a table answer says this catalog's user reads through (null: none). An
     *  answer with stored policies but no reader's {@code policy} (not a load) is refused on read. */
    static JsonNode policyOf(JsonNode t) {
        JsonNode policy = t.get("policy");
        if (policy != null) return policy.isNull() ? null : policy;
        boolean stored = (t.hasNonNull("row_filter")) || (t.has("column_masks") && t.get("column_masks").size() > 0);
        return stored ? Json.object().put("refuse", true) : null;
    }

    static final String TableCatalog_PROP_LOCATION = org.apache.spark.sql.connector.catalog.TableCatalog.PROP_LOCATION;

    // ---- views ------------------------------------------------------------------------------------
    private View view(JsonNode v) {
        View.Builder b = new View.Builder()
                .withProperties(Json.toMap(v.get("properties")))
                .withSchema((StructType) DataType.fromJson(v.get("schema").asText()))
                .withQueryText(v.get("sql").asText())
                .withCurrentCatalog(Json.text(v, "current_catalog"))
                .withCurrentNamespace(Json.toStrings(v.get("current_namespace")))
                .withQueryColumnNames(Json.toStrings(v.get("query_column_names")))
                .withSqlConfigs(Json.toMap(v.get("sql_configs")));
        String mode = Json.text(v, "schema_mode");
        if ("UNSUPPORTED".equals(mode) && org.apache.spark.sql.internal.SQLConf.get().viewSchemaBindingEnabled()) {
            // made while spark.sql.legacy.viewSchemaBindingMode was false: once it is true again the view
            // binds its schema, as the session catalog's views do (SHOW CREATE TABLE … WITH SCHEMA BINDING)
            mode = "BINDING";
        }
        if (mode != null) b = b.withSchemaMode(mode);
        return b.build();
    }

    private ObjectNode viewRequest(Identifier ident, View view, boolean replace) {
        ObjectNode r = request(ident);
        r.put("sql", view.queryText());
        r.put("schema", view.schema().json());
        r.set("properties", Json.map(view.properties()));
        r.put("current_catalog", view.currentCatalog());
        r.set("current_namespace", Json.strings(view.currentNamespace() == null ? new String[0] : view.currentNamespace()));
        r.set("query_column_names", Json.strings(view.queryColumnNames() == null ? new String[0] : view.queryColumnNames()));
        r.set("sql_configs", Json.map(view.sqlConfigs()));
        r.put("schema_mode", view.schemaMode());
        r.put("replace", replace);
        return r;
    }

    @Override
    public View createView(Identifier ident, View view) {
        return view(call("create_view", viewRequest(ident, view, false), ident, null).get("view"));
    }

    @Override
    public View replaceView(Identifier ident, View view) {
        return view(call("create_view", viewRequest(ident, view, true), ident, null).get("view"));
    }

    @Override
    public View createOrReplaceView(Identifier ident, View view) {
        return view(call("create_view", viewRequest(ident, view, true), ident, null).get("view"));
    }

    @Override
    public boolean dropView(Identifier ident) {
        return call("drop_view", request(ident), ident, null).get("dropped").asBoolean();
    }

    @Override
    public void renameView(Identifier from, Identifier to) {
        ObjectNode r = request(from);
        r.set("to", Json.strings(toParts(to)));
        call("rename_view", r, from, null);
    }

    // ---- procedures: CALL <catalog>.system.<name>(...) (UshasProcedures) ------------------------------
    @Override
    public org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure loadProcedure(Identifier ident) {
        return UshasProcedures.load(this, ident);
    }

    @Override
    public Identifier[] listProcedures(String[] namespace) {
        return UshasProcedures.list(this, namespace);
    }

    // ---- atomic CTAS / RTAS (StagingTableCatalog): see UshasStagedTable --------------------------------
    @Override
    public org.apache.spark.sql.connector.catalog.StagedTable stageCreate(Identifier ident, TableInfo info) {
        return UshasStagedTable.stage(this, ident, info, "create");
    }

    @Override
    public org.apache.spark.sql.connector.catalog.StagedTable stageReplace(Identifier ident, TableInfo info) {
        return UshasStagedTable.stage(this, ident, info, "replace");
    }

    @Override
    public org.apache.spark.sql.connector.catalog.StagedTable stageCreateOrReplace(Identifier ident, TableInfo info) {
        return UshasStagedTable.stage(this, ident, info, "create_or_replace");
    }

    @Override
    public org.apache.spark.sql.connector.catalog.StagedTable stageCreate(Identifier ident,
            org.apache.spark.sql.connector.catalog.Column[] columns, Transform[] partitions, Map<String, String> properties) {
        return UshasStagedTable.stage(this, ident, columns, partitions, properties, "create");
    }

    @Override
    public org.apache.spark.sql.connector.catalog.StagedTable stageReplace(Identifier ident,
            org.apache.spark.sql.connector.catalog.Column[] columns, Transform[] partitions, Map<String, String> properties) {
        return UshasStagedTable.stage(this, ident, columns, partitions, properties, "replace");
    }

    @Override
    public org.apache.spark.sql.connector.catalog.StagedTable stageCreateOrReplace(Identifier ident,
            org.apache.spark.sql.connector.catalog.Column[] columns, Transform[] partitions, Map<String, String> properties) {
        return UshasStagedTable.stage(this, ident, columns, partitions, properties, "create_or_replace");
    }

    // ---- CREATE TABLE ... LIKE: Spark 4.3's CreateTableLikeExec calls createTableLike (TableCatalog's default
    // refuses: "<catalog> does not support CREATE TABLE LIKE"); see UshasTableLike -----------------------------
    @Override
    public Table createTableLike(Identifier ident, TableInfo info, Table source) {
        return table(ident, call("create_table_like", UshasTableLike.request(this, ident, info, source), ident, null)
                .get("table"));
    }

    // ---- view schema evolution (ViewSchemaSync) ---------------------------------------------------
    /** Store a WITH SCHEMA [TYPE] EVOLUTION view's new schema (a new view version); answers the view as
     *  stored. {@code queryColumnNames} null: unchanged (TYPE EVOLUTION). */
    org.apache.spark.sql.connector.catalog.View syncViewSchema(Identifier ident, StructType schema,
                                                               String[] queryColumnNames, String mode) {
        ObjectNode r = request(ident);
        r.put("schema", schema.json());
        if (queryColumnNames != null) r.set("query_column_names", Json.strings(queryColumnNames));
        r.put("schema_mode", mode);
        return view(call("sync_view_schema", r, ident, null).get("view"));
    }

    // ---- functions (FunctionCatalog; the statements: FunctionStatements, UshasFunctionCommand) ------
    /** One function op: {@code payload}'s fields with the namespace and, unless null, the function name. */
    JsonNode functionCall(String op, String[] namespace, String function, ObjectNode payload) {
        ObjectNode r = request(namespace);
        if (function != null) r.put("name", function);
        payload.fields().forEachRemaining(e -> r.set(e.getKey(), e.getValue()));
        return call(op, r, null, namespace);
    }

    @Override
    public Identifier[] listFunctions(String[] namespace) {
        JsonNode answer = functionCall("list_functions", namespace, null, Json.object());
        List<Identifier> out = new ArrayList<>();
        for (JsonNode n : answer.get("names")) out.add(Identifier.of(namespace, n.asText()));
        return out.toArray(new Identifier[0]);
    }

    @Override
    public org.apache.spark.sql.connector.catalog.functions.UnboundFunction loadFunction(Identifier ident) {
        JsonNode answer = functionCall("load_function", ident.namespace(), ident.name(), Json.object());
        return UshasFunctions.unbound(ident, name + "." + String.join(".", toParts(ident)), answer.get("function"));
    }

    // ---- conformance with the session catalog ---------------------------------------------------------
    /** Column DEFAULT values: Spark keeps them in the schema's field metadata, which the catalog stores. */
    @Override
    public java.util.Set<org.apache.spark.sql.connector.catalog.TableCatalogCapability> capabilities() {
        return java.util.EnumSet.of(org.apache.spark.sql.connector.catalog.TableCatalogCapability.SUPPORT_COLUMN_DEFAULT_VALUE);
    }
}
