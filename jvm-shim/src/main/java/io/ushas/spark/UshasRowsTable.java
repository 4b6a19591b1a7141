package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A read-only table whose rows come from Python: the metadata tables of a table
 * ({@code ushas.db.t.history}, {@code .partitions}, ...) and the system tables ({@code ushas.system.*}),
 * see {@code ushas_catalog.sql_tables}. Adaptation only: Spark's pushed predicates become the catalog's
 * filter JSON (the format of {@code ushas_catalog.data.pruning}), the rows come back in pages (one
 * {@code rows_page} call each: at most {@code page_size} rows and a continuation token), so no side ever
 * holds the whole table. Spark re-checks every predicate on what comes back, so Python only has to be
 * conservative. No {@code SupportsWrite}: Spark refuses writes with its {@code UNSUPPORTED_FEATURE.TABLE_OPERATION}.
 */
final class UshasRowsTable implements SupportsRead {
    /** Rows per bridge call (measured: bench/sql_tables.py; the page travels as a temp file). */
    static final int PAGE_SIZE = 10000;

    private final String name;
    private final StructType schema;
    private final ObjectNode base;
    private final Bridge.BridgeOptions options;
    private final Identifier ident;

    private UshasRowsTable(String name, StructType schema, ObjectNode base, Bridge.BridgeOptions options,
                           Identifier ident) {
        this.name = name;
        this.schema = schema;
        this.base = base;
        this.options = options;
        this.ident = ident;
    }

    /** A metadata table ({@code db.table.<name>}) or a system table ({@code system.<name>}): identifiers the
     *  catalog's tables can never have (one namespace level; {@code system} is reserved). */
    static boolean handles(Identifier ident) {
        String[] ns = ident.namespace();
        return ns.length == 2 || (ns.length == 1 && "system".equals(ns[0]));
    }

    /** One round trip: Python checks the identifier and answers the table's schema. */
    static UshasRowsTable load(UshasCatalog catalog, Identifier ident) {
        ObjectNode r = catalog.request(ident);
        JsonNode answer = catalog.call("rows_table", r, ident, null);
        StructType schema = (StructType) DataType.fromJson(answer.get("schema").asText());
        return new UshasRowsTable(catalog.name() + "." + String.join(".", UshasCatalog.toParts(ident)), schema, r,
                catalog.bridgeOptions(), ident);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
        return schema;
    }

    @Override
    public Map<String, String> properties() {
        return Map.of("read_only", "true");
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return new Builder();
    }

    // ---- pushdown -----------------------------------------------------------------------------------
    private final class Builder implements SupportsPushDownV2Filters, SupportsPushDownRequiredColumns,
            SupportsPushDownLimit {
        private Predicate[] pushed = new Predicate[0];
        private final ArrayNode filters = Json.array();
        private StructType required = schema;
        private int limit = -1;

        /** Every predicate goes to Python as JSON and back to Spark, which evaluates it again. */
        @Override
        public Predicate[] pushPredicates(Predicate[] predicates) {
            List<Predicate> known = new ArrayList<>();
            for (Predicate p : predicates) {
                JsonNode f = filter(p);
                if (!"unknown".equals(Json.text(f, "op"))) {
                    filters.add(f);
                    known.add(p);
                }
            }
            pushed = known.toArray(new Predicate[0]);
            return predicates;
        }

        @Override
        public Predicate[] pushedPredicates() {
            return pushed;
        }

        @Override
        public void pruneColumns(StructType requiredSchema) {
            required = requiredSchema;
        }

        @Override
        public boolean pushLimit(int n) {
            limit = n;
            return true;
        }

        @Override
        public boolean isPartiallyPushed() {
            return true;
        }

        @Override
        public Scan build() {
            ObjectNode r = base.deepCopy();
            r.set("filters", filters);
            r.set("columns", Json.strings(required.fieldNames()));
            if (limit >= 0) r.put("limit", limit);
            r.put("page_size", PAGE_SIZE);
            return new RowsScan(required, r.toString(), new Options(options), ident.namespace(), ident.name());
        }
    }

    /** A V2 predicate as the catalog's filter JSON ({@code ushas_catalog.data.pruning}); what has no form
     *  there is {@code {"op": "unknown"}} (Python keeps every row for it). */
    static JsonNode filter(Predicate p) {
        ObjectNode out = Json.object();
        Expression[] c = p.children();
        switch (p.name()) {
            case "AND", "OR" -> {
                ArrayNode children = out.put("op", p.name().toLowerCase(java.util.Locale.ROOT)).putArray("children");
                for (Expression e : c) children.add(e instanceof Predicate q ? filter(q) : unknown());
                return out;
            }
            case "NOT" -> {
                return c[0] instanceof Predicate q ? out.put("op", "not").set("child", filter(q)) : unknown();
            }
            case "ALWAYS_TRUE" -> {
                return out.put("op", "true");
            }
            case "ALWAYS_FALSE" -> {
                return out.put("op", "false");
            }
            case "IS_NULL", "IS_NOT_NULL" -> {
                String col = column(c[0]);
                return col == null ? unknown()
                        : out.put("op", p.name().equals("IS_NULL") ? "is_null" : "is_not_null").put("column", col);
            }
            case "IN" -> {
                String col = column(c[0]);
                if (col == null) return unknown();
                ArrayNode values = Json.array();
                for (int i = 1; i < c.length; i++) {
                    JsonNode v = literal(c[i]);
                    if (v == null) return unknown();
                    values.add(v);
                }
                return out.put("op", "in").put("column", col).set("values", values);
            }
            case "=", "<", "<=", ">", ">=" -> {
                String op = switch (p.name()) {
                    case "=" -> "eq";
                    case "<" -> "lt";
                    case "<=" -> "le";
                    case ">" -> "gt";
                    default -> "ge";
                };
                String col = column(c[0]);
                JsonNode v = literal(c[1]);
                if (col == null || v == null) {  // literal on the left: swap the comparison
                    col = column(c[1]);
                    v = literal(c[0]);
                    op = switch (op) {
                        case "lt" -> "gt";
                        case "le" -> "ge";
                        case "gt" -> "lt";
                        case "ge" -> "le";
                        default -> op;
                    };
                }
                if (col == null || v == null || v.isNull()) return unknown();
                return out.put("op", op).put("column", col).set("value", v);
            }
            case "STARTS_WITH" -> {
                String col = column(c[0]);
                JsonNode v = literal(c[1]);
                return col == null || v == null ? unknown() : out.put("op", "starts_with").put("column", col).set("value", v);
            }
            default -> {
                return unknown();
            }
        }
    }

    private static ObjectNode unknown() {
        return Json.object().put("op", "unknown");
    }

    private static String column(Expression e) {
        if (e instanceof NamedReference ref && ref.fieldNames().length == 1) return ref.fieldNames()[0];
        return null;
    }

    private static JsonNode literal(Expression e) {
        if (!(e instanceof Literal<?> lit)) return null;
        Object v = lit.value();
        DataType t = lit.dataType();
        JsonNodeFactory f = JsonNodeFactory.instance;
        if (v == null) return f.nullNode();
        if (t instanceof DateType) return f.objectNode().put("days", ((Number) v).intValue());
        if (t instanceof TimestampType || t instanceof TimestampNTZType) {
            return f.objectNode().put("micros", ((Number) v).longValue());
        }
        if (v instanceof Integer || v instanceof Short || v instanceof Byte) return f.numberNode(((Number) v).intValue());
        if (v instanceof Long l) return f.numberNode(l);
        if (v instanceof Boolean b) return f.booleanNode(b);
        if (v instanceof UTF8String s) return f.textNode(s.toString());
        if (t instanceof DecimalType) return f.textNode(v.toString());
        return null;
    }

    // ---- the scan: one input partition, read page by page -------------------------------------------
    /** The bridge options as a serializable value (the reader may run on an executor thread). */
    record Options(String catalog, String python, int timeout, int start, int liveness, boolean waitForRegistration)
            implements Serializable {
        Options(Bridge.BridgeOptions o) {
            this(o.catalog(), o.python(), o.timeoutSeconds(), o.startSeconds(), o.livenessSeconds(),
                    o.waitForRegistration());
        }

        Bridge.BridgeOptions bridge() {
            return new Bridge.BridgeOptions(catalog, python, timeout, start, liveness, waitForRegistration);
        }
    }

    private record RowsScan(StructType schema, String request, Options options, String[] namespace, String table)
            implements Scan, Batch, InputPartition, PartitionReaderFactory {
        @Override
        public StructType readSchema() {
            return schema;
        }

        @Override
        public String description() {
            JsonNode r = Json.parse(request);
            return "UshasRowsScan " + String.join(".", Json.toStrings(r.get("namespace"))) + "."
                    + Json.text(r, "name") + " filters=" + r.get("filters");
        }

        @Override
        public Batch toBatch() {
            return this;
        }

        @Override
        public InputPartition[] planInputPartitions() {
            return new InputPartition[] {this};
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            return this;
        }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            return new Pages(schema, (ObjectNode) Json.parse(request), options.bridge(), Identifier.of(namespace, table));
        }
    }

    /** The cursor over Python's pages: one {@code rows_page} call per page, the token of each the start of
     *  the next; one page of JSON rows held at a time. */
    static final class Pages implements PartitionReader<InternalRow> {
        private final StructType schema;
        private final ObjectNode request;
        private final Bridge.BridgeOptions options;
        private final Identifier ident;
        private Iterator<JsonNode> rows = java.util.Collections.emptyIterator();
        private boolean more = true;
        private InternalRow current;

        Pages(StructType schema, ObjectNode request, Bridge.BridgeOptions options, Identifier ident) {
            this.schema = schema;
            this.request = request;
            this.options = options;
            this.ident = ident;
        }

        @Override
        public boolean next() {
            while (!rows.hasNext()) {
                if (!more) return false;
                JsonNode answer = Bridge.call("rows_page", request, options);
                JsonNode error = answer.get("error");
                if (error != null && !error.isNull()) throw Errors.toSpark(error, ident, null);
                rows = answer.get("rows").elements();
                JsonNode token = answer.get("token");
                more = token != null && !token.isNull();
                if (more) request.set("token", token);
            }
            current = row(rows.next(), schema);
            return true;
        }

        @Override
        public InternalRow get() {
            return current;
        }

        @Override
        public void close() {
            rows = java.util.Collections.emptyIterator();
        }
    }

    /** A row as Python sends it (a JSON array in the schema's column order) -> InternalRow. */
    static InternalRow row(JsonNode values, StructType schema) {
        StructField[] fields = schema.fields();
        Object[] out = new Object[fields.length];
        for (int i = 0; i < fields.length; i++) out[i] = value(values.get(i), fields[i].dataType());
        return new GenericInternalRow(out);
    }

    /** Values: strings, numbers, booleans; timestamps as epoch microseconds, dates as epoch days; arrays as
     *  JSON arrays, maps as JSON objects, structs as JSON arrays in field order. */
    private static Object value(JsonNode v, DataType t) {
        if (v == null || v.isNull()) return null;
        if (t instanceof StringType) return UTF8String.fromString(v.isTextual() ? v.asText() : v.toString());
        if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) return v.asLong();
        if (t instanceof IntegerType || t instanceof DateType) return v.asInt();
        if (t instanceof BooleanType) return v.asBoolean();
        if (t instanceof DoubleType) return v.asDouble();
        if (t instanceof org.apache.spark.sql.types.FloatType) return (float) v.asDouble();
        if (t instanceof org.apache.spark.sql.types.ShortType) return (short) v.asInt();
        if (t instanceof org.apache.spark.sql.types.ByteType) return (byte) v.asInt();
        if (t instanceof ArrayType a) {
            Object[] items = new Object[v.size()];
            for (int i = 0; i < items.length; i++) items[i] = value(v.get(i), a.elementType());
            return new GenericArrayData(items);
        }
        if (t instanceof MapType m) {
            List<Object> keys = new ArrayList<>();
            List<Object> vals = new ArrayList<>();
            Iterator<Map.Entry<String, JsonNode>> it = v.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                keys.add(UTF8String.fromString(e.getKey()));
                vals.add(value(e.getValue(), m.valueType()));
            }
            return new ArrayBasedMapData(new GenericArrayData(keys.toArray()), new GenericArrayData(vals.toArray()));
        }
        if (t instanceof StructType s) return row(v, s);
        if (t instanceof DecimalType d) {
            return org.apache.spark.sql.types.Decimal.apply(new java.math.BigDecimal(v.asText()), d.precision(), d.scale());
        }
        throw Errors.invalidArgument("unsupported column type " + t.simpleString());
    }
}
