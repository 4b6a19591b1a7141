package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * {@code CALL <catalog>.system.<name>(...)}: Spark's procedures, adapted from the procedure table Python
 * declares ({@code ushas_catalog.procedures}: names, parameters with their Spark types and defaults, result
 * columns, the implementation). Generic: a procedure is loaded with {@code load_procedure}, listed with
 * {@code list_procedures} and run with {@code call_procedure} (its arguments as JSON, in the declared order;
 * Spark itself checks arity, names and types and fills the defaults). An answer may ask the JVM for what
 * only the JVM can do, then Python is called again with the result ({@code state} + {@code jvm_result}):
 * {@code sql} (run queries, answer their rows as JSON) and {@code repair} (list partition directories with
 * Hadoop's FileSystem: {@link PartitionRepair}). {@code refresh} names tables whose cached relations and
 * cached data this session drops; {@code delete_paths} are deleted after the commit
 * ({@link UshasCatalog#call}).
 */
final class UshasProcedures {
    /** the namespace procedures live in: {@code CALL ushas.system.undrop_table(...)} */
    static final String NAMESPACE = "system";
    /** JVM round trips one call may ask for (a procedure asks for one or two) */
    static final int MAX_STEPS = 8;

    private UshasProcedures() {}

    static UnboundProcedure load(UshasCatalog catalog, Identifier ident) {
        if (ident.namespace().length != 1 || !NAMESPACE.equalsIgnoreCase(ident.namespace()[0])) {
            // not a SparkThrowable: Spark reports FAILED_TO_LOAD_ROUTINE, as for any unknown procedure
            throw new NoSuchElementException(catalog.name() + " has procedures in namespace " + NAMESPACE
                    + " only (CALL " + catalog.name() + "." + NAMESPACE + ".<name>(...)), not " + ident);
        }
        ObjectNode r = catalog.request();
        r.put("procedure", ident.name());
        JsonNode p = catalog.call("load_procedure", r, null, null).get("procedure");
        if (p == null || p.isNull()) {
            throw new NoSuchElementException(catalog.name() + " has no procedure " + NAMESPACE + "." + ident.name()
                    + " (SHOW PROCEDURES IN " + catalog.name() + "." + NAMESPACE + " lists them)");
        }
        return new Unbound(catalog, p);
    }

    static Identifier[] list(UshasCatalog catalog, String[] namespace) {
        if (namespace.length != 1 || !NAMESPACE.equalsIgnoreCase(namespace[0])) return new Identifier[0];
        List<Identifier> out = new ArrayList<>();
        for (JsonNode n : catalog.call("list_procedures", catalog.request(), null, null).get("procedures")) {
            out.add(Identifier.of(new String[] {NAMESPACE}, n.asText()));
        }
        return out.toArray(new Identifier[0]);
    }

    /** A procedure as Python declared it; binding changes nothing (one signature per procedure). */
    static final class Unbound implements UnboundProcedure {
        private final UshasCatalog catalog;
        private final JsonNode spec;

        Unbound(UshasCatalog catalog, JsonNode spec) {
            this.catalog = catalog;
            this.spec = spec;
        }

        @Override
        public String name() {
            return spec.get("name").asText();
        }

        @Override
        public String description() {
            return Json.text(spec, "description");
        }

        @Override
        public BoundProcedure bind(StructType inputType) {
            return new Bound(catalog, spec);
        }
    }

    static final class Bound implements BoundProcedure {
        private final UshasCatalog catalog;
        private final JsonNode spec;
        private final ProcedureParameter[] parameters;

        Bound(UshasCatalog catalog, JsonNode spec) {
            this.catalog = catalog;
            this.spec = spec;
            List<ProcedureParameter> out = new ArrayList<>();
            for (JsonNode p : spec.get("parameters")) {
                ProcedureParameter.Builder b = ProcedureParameter.in(p.get("name").asText(),
                        DataType.fromDDL(p.get("type").asText()));
                String dflt = Json.text(p, "default");
                if (dflt != null) b = b.defaultValue(dflt);
                String doc = Json.text(p, "doc");
                if (doc != null) b = b.comment(doc);
                out.add(b.build());
            }
            parameters = out.toArray(new ProcedureParameter[0]);
        }

        @Override
        public String name() {
            return spec.get("name").asText();
        }

        @Override
        public String description() {
            return Json.text(spec, "description");
        }

        @Override
        public ProcedureParameter[] parameters() {
            return parameters;
        }

        @Override
        public boolean isDeterministic() {
            return false;
        }

        @Override
        public Iterator<Scan> call(InternalRow input) {
            ObjectNode args = Json.object();
            for (int i = 0; i < parameters.length; i++) {
                DataType t = parameters[i].dataType();
                args.set(parameters[i].name(), input.isNullAt(i) ? Json.object().nullNode() : toJson(input.get(i, t), t));
            }
            JsonNode state = null;
            JsonNode jvmResult = null;
            for (int step = 0; step < MAX_STEPS; step++) {
                ObjectNode r = catalog.request();
                r.put("procedure", name());
                r.set("args", args);
                if (state != null) r.set("state", state);
                if (jvmResult != null) r.set("jvm_result", jvmResult);
                JsonNode answer = catalog.call("call_procedure", r, null, null);
                refresh(catalog, answer.get("refresh"));
                JsonNode jvm = answer.get("jvm");
                if (jvm == null || jvm.isNull()) return result(answer);
                state = answer.get("state");
                jvmResult = runJvm(catalog, jvm);
            }
            throw Errors.invalidArgument("procedure " + name() + " asked the JVM for more than " + MAX_STEPS + " steps");
        }
    }

    // ---- what only the JVM can do ------------------------------------------------------------------
    private static JsonNode runJvm(UshasCatalog catalog, JsonNode jvm) {
        String action = Json.text(jvm, "action");
        if ("sql".equals(action)) {
            ArrayNode out = Json.array();
            SparkSession session = SparkSession.active();
            PathReads.PROCEDURE.set(catalog);  // the procedure's own queries: its catalog checks their paths
            try {
                for (JsonNode q : jvm.get("queries")) {
                    ArrayNode rows = out.addArray();
                    Dataset<Row> df = session.sql(q.asText());
                    for (String row : df.toJSON().collectAsList()) rows.add(Json.parse(row));
                }
            } finally {
                PathReads.PROCEDURE.remove();
            }
            return out;
        }
        if ("repair".equals(action)) {
            Identifier ident = Identifier.of(Json.toStrings(jvm.get("namespace")), Json.text(jvm, "name"));
            PartitionRepair.Result r = new PartitionRepair(classic(), catalog, ident, jvm.path("add").asBoolean(true),
                    jvm.path("drop").asBoolean(false), "CALL repair_table").run();
            ObjectNode out = Json.object();
            out.put("listed", r.listed).put("added", r.added).put("dropped", r.dropped).put("invalid", r.invalid);
            return out;
        }
        if ("check_policy".equals(action)) {  // set_row_filter / set_column_mask: Spark parses and resolves it
            Identifier ident = Identifier.of(Json.toStrings(jvm.get("namespace")), Json.text(jvm, "name"));
            RowPolicies.check(classic(), catalog.loadTable(ident).columns(), jvm);
            return Json.object();
        }
        throw Errors.invalidArgument("unknown JVM action " + action + " asked by a procedure");
    }

    private static org.apache.spark.sql.classic.SparkSession classic() {
        SparkSession s = SparkSession.active();
        return s instanceof org.apache.spark.sql.classic.SparkSession c ? c : null;
    }

    /** Drops this session's cached relations of the named tables and re-caches their cached data. */
    static void refresh(UshasCatalog catalog, JsonNode tables) {
        if (tables == null || tables.isNull()) return;
        org.apache.spark.sql.classic.SparkSession session = classic();
        for (JsonNode t : tables) {
            String[] parts = Json.toStrings(t);
            String[] ns = java.util.Arrays.copyOf(parts, parts.length - 1);
            catalog.invalidateTable(Identifier.of(ns, parts[parts.length - 1]));
            if (session == null) continue;
            List<String> name = new ArrayList<>();
            name.add(catalog.name());
            name.addAll(List.of(parts));
            session.sharedState().cacheManager().recacheTableOrView(session,
                    scala.jdk.javaapi.CollectionConverters.asScala(name).toList(), true);
        }
    }

    // ---- values ---------------------------------------------------------------------------------------
    /** An argument value (Spark's internal form) as JSON: timestamps as microseconds since the epoch. */
    static JsonNode toJson(Object v, DataType t) {
        ObjectNode holder = Json.object();
        if (v == null) return holder.nullNode();
        if (t instanceof StringType) return holder.textNode(v.toString());
        if (t instanceof IntegerType || t instanceof LongType || t instanceof TimestampType) {
            return holder.numberNode(((Number) v).longValue());
        }
        if (t instanceof BooleanType) return holder.booleanNode((Boolean) v);
        if (t instanceof DoubleType) return holder.numberNode((Double) v);
        if (t instanceof ArrayType a) {
            ArrayNode out = Json.array();
            ArrayData data = (ArrayData) v;
            for (int i = 0; i < data.numElements(); i++) {
                out.add(data.isNullAt(i) ? null : toJson(data.get(i, a.elementType()), a.elementType()));
            }
            return out;
        }
        if (t instanceof MapType m) {
            ObjectNode out = Json.object();
            MapData data = (MapData) v;
            for (int i = 0; i < data.numElements(); i++) {
                Object value = data.valueArray().isNullAt(i) ? null : data.valueArray().get(i, m.valueType());
                out.set(data.keyArray().get(i, m.keyType()).toString(), toJson(value, m.valueType()));
            }
            return out;
        }
        throw Errors.invalidArgument("procedure arguments of type " + t.sql() + " are not supported");
    }

    /** A result value from JSON into Spark's internal form for the column type {@code t}. */
    static Object fromJson(JsonNode v, DataType t) {
        if (v == null || v.isNull()) return null;
        if (t instanceof StringType) return UTF8String.fromString(v.isTextual() ? v.asText() : v.toString());
        if (t instanceof IntegerType) return v.asInt();
        if (t instanceof LongType || t instanceof TimestampType) return v.asLong();
        if (t instanceof BooleanType) return v.asBoolean();
        if (t instanceof DoubleType) return v.asDouble();
        if (t instanceof ArrayType a) {
            Object[] out = new Object[v.size()];
            for (int i = 0; i < out.length; i++) out[i] = fromJson(v.get(i), a.elementType());
            return new GenericArrayData(out);
        }
        if (t instanceof MapType m) {
            List<Object> keys = new ArrayList<>();
            List<Object> values = new ArrayList<>();
            v.fields().forEachRemaining(e -> {
                keys.add(fromJson(Json.object().textNode(e.getKey()), m.keyType()));
                values.add(fromJson(e.getValue(), m.valueType()));
            });
            return new ArrayBasedMapData(new GenericArrayData(keys.toArray()), new GenericArrayData(values.toArray()));
        }
        throw Errors.invalidArgument("procedure results of type " + t.sql() + " are not supported");
    }

    private static Iterator<Scan> result(JsonNode answer) {
        StructType schema = StructType.fromDDL(answer.get("schema").asText());
        List<InternalRow> rows = new ArrayList<>();
        for (JsonNode row : answer.get("rows")) {
            Object[] values = new Object[schema.length()];
            for (int i = 0; i < values.length; i++) values[i] = fromJson(row.get(i), schema.fields()[i].dataType());
            rows.add(new GenericInternalRow(values));
        }
        InternalRow[] out = rows.toArray(new InternalRow[0]);
        Scan scan = new LocalScan() {
            @Override
            public InternalRow[] rows() {
                return out;
            }

            @Override
            public StructType readSchema() {
                return schema;
            }
        };
        return Collections.singletonList(scan).iterator();
    }
}
