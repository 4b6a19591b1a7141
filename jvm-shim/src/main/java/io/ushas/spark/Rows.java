package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import java.math.BigDecimal;
import java.sql.Date;
import java.time.LocalDate;

/**
 * Partition values between Spark's InternalRow and JSON: a JSON object column -> value, values as
 * JSON strings / numbers / booleans / null (dates as ISO strings). No rules here: Python checks them.
 */
final class Rows {
    private Rows() {}

    static ObjectNode toJson(InternalRow row, StructType schema) {
        return toJson(row, schema.fields());
    }

    static ObjectNode toJson(InternalRow row, StructField[] fields) {
        ObjectNode out = Json.object();
        for (int i = 0; i < fields.length; i++) {
            String name = fields[i].name();
            if (row.isNullAt(i)) {
                out.putNull(name);
                continue;
            }
            DataType t = fields[i].dataType();
            Object v = row.get(i, t);
            if (t instanceof IntegerType || t instanceof ShortType || t instanceof ByteType) {
                out.put(name, ((Number) v).intValue());
            } else if (t instanceof LongType) {
                out.put(name, ((Number) v).longValue());
            } else if (t instanceof BooleanType) {
                out.put(name, (Boolean) v);
            } else if (t instanceof DateType) {
                out.put(name, LocalDate.ofEpochDay(((Number) v).longValue()).toString());
            } else if (t instanceof DecimalType) {
                out.put(name, ((Decimal) v).toJavaBigDecimal().toPlainString());
            } else {
                out.put(name, v.toString());
            }
        }
        return out;
    }

    static InternalRow fromJson(JsonNode values, StructType schema) {
        StructField[] fields = schema.fields();
        Object[] out = new Object[fields.length];
        for (int i = 0; i < fields.length; i++) {
            JsonNode v = values.get(fields[i].name());
            out[i] = v == null || v.isNull() ? null : internal(v, fields[i].dataType());
        }
        return new GenericInternalRow(out);
    }

    /** The rows of a compact answer ({@code {"columns": [names], "rows": [[values], ...]}}, Python's
     *  {@code spark_ops.list_partitions}) as InternalRows of {@code schema}; columns matched by name. */
    static InternalRow[] fromAnswer(JsonNode answer, StructType schema) {
        StructField[] fields = schema.fields();
        JsonNode columns = answer.get("columns");
        int[] at = new int[fields.length];
        for (int i = 0; i < fields.length; i++) {
            at[i] = -1;
            for (int j = 0; j < columns.size(); j++) {
                if (columns.get(j).asText().equals(fields[i].name())) at[i] = j;
            }
        }
        JsonNode rows = answer.get("rows");
        InternalRow[] out = new InternalRow[rows.size()];
        for (int r = 0; r < out.length; r++) {
            JsonNode row = rows.get(r);
            Object[] values = new Object[fields.length];
            for (int i = 0; i < fields.length; i++) {
                JsonNode v = at[i] < 0 ? null : row.get(at[i]);
                values[i] = v == null || v.isNull() ? null : internal(v, fields[i].dataType());
            }
            out[r] = new GenericInternalRow(values);
        }
        return out;
    }

    private static Object internal(JsonNode v, DataType t) {
        if (t instanceof IntegerType) return v.asInt();
        if (t instanceof ShortType) return (short) v.asInt();
        if (t instanceof ByteType) return (byte) v.asInt();
        if (t instanceof LongType) return v.asLong();
        if (t instanceof BooleanType) return v.asBoolean();
        if (t instanceof DateType) return (int) LocalDate.parse(v.asText()).toEpochDay();
        if (t instanceof DecimalType d) return Decimal.apply(new BigDecimal(v.asText()), d.precision(), d.scale());
        if (t instanceof StringType) return UTF8String.fromString(v.asText());
        throw Errors.invalidArgument("unsupported partition column type " + t.simpleString());
    }

    static ArrayNode rows(InternalRow[] rows, StructType schema) {
        ArrayNode out = Json.array();
        for (InternalRow r : rows) out.add(toJson(r, schema));
        return out;
    }

    /** A data source filter as JSON, for Python to evaluate against partition values. */
    static JsonNode filter(Filter f) {
        ObjectNode out = Json.object();
        if (f instanceof And a) {
            out.put("op", "and").set("args", Json.array().add(filter(a.left())).add(filter(a.right())));
        } else if (f instanceof Or o) {
            out.put("op", "or").set("args", Json.array().add(filter(o.left())).add(filter(o.right())));
        } else if (f instanceof Not n) {
            out.put("op", "not").set("args", Json.array().add(filter(n.child())));
        } else if (f instanceof EqualTo e) {
            out.put("op", "eq").put("column", e.attribute()).set("value", literal(e.value()));
        } else if (f instanceof EqualNullSafe e) {
            out.put("op", "eq_null_safe").put("column", e.attribute()).set("value", literal(e.value()));
        } else if (f instanceof IsNull n) {
            out.put("op", "is_null").put("column", n.attribute());
        } else if (f instanceof IsNotNull n) {
            out.put("op", "is_not_null").put("column", n.attribute());
        } else if (f instanceof In in) {
            ArrayNode values = Json.array();
            for (Object v : in.values()) values.add(literal(v));
            out.put("op", "in").put("column", in.attribute()).set("values", values);
        } else if (f instanceof org.apache.spark.sql.sources.AlwaysTrue) {
            out.put("op", "true");
        } else if (f instanceof org.apache.spark.sql.sources.AlwaysFalse) {
            out.put("op", "false");
        } else {
            out.put("op", "unsupported").put("text", f.toString());
        }
        return out;
    }

    private static JsonNode literal(Object v) {
        if (v == null) return Json.MAPPER.nullNode();
        if (v instanceof Integer || v instanceof Short || v instanceof Byte) return Json.MAPPER.getNodeFactory().numberNode(((Number) v).intValue());
        if (v instanceof Long l) return Json.MAPPER.getNodeFactory().numberNode(l);
        if (v instanceof Boolean b) return Json.MAPPER.getNodeFactory().booleanNode(b);
        if (v instanceof Date d) return Json.MAPPER.getNodeFactory().textNode(d.toLocalDate().toString());
        if (v instanceof LocalDate d) return Json.MAPPER.getNodeFactory().textNode(d.toString());
        if (v instanceof BigDecimal d) return Json.MAPPER.getNodeFactory().textNode(d.toPlainString());
        return Json.MAPPER.getNodeFactory().textNode(v.toString());
    }
}
