package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.DynamicPruningExpression;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.InterpretedPredicate;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.Predicate$;
import org.apache.spark.sql.execution.InSubqueryExec;
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
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Function1;
import scala.runtime.AbstractPartialFunction;
import scala.jdk.javaapi.CollectionConverters;

import java.util.List;

/**
 * Spark's partition filters (catalyst expressions over partition columns) in two forms: JSON for the
 * catalog, which prunes over its ordered partition keys ({@code ushas_catalog.pruning}, where the
 * format is documented), and Spark's own interpreted predicate, applied to what the catalog returns
 * so the result is exactly Spark's. Translation only: what has no JSON form becomes
 * {@code {"op": "unknown"}} and prunes nothing in Python.
 */
final class PartitionFilters {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private PartitionFilters() {}

    /** The conjunction of {@code filters} and of {@code more} (already JSON), or null when there are none. */
    static JsonNode toJson(List<Expression> filters, List<JsonNode> more) {
        List<JsonNode> all = new java.util.ArrayList<>();
        for (Expression e : filters) all.add(json(e));
        all.addAll(more);
        if (all.isEmpty()) return null;
        if (all.size() == 1) return all.get(0);
        ObjectNode and = F.objectNode().put("op", "and");
        ArrayNode children = and.putArray("children");
        all.forEach(children::add);
        return and;
    }

    /** Most values a dynamic filter sends to the catalog; more prune nothing there (Spark still filters). */
    static final int MAX_RUNTIME_VALUES = 100_000;

    /**
     * Dynamic partition filters whose subquery has run ({@code DynamicPruningExpression(InSubqueryExec)}
     * on a partition column), as {@code in} filters of their values; the others are left out.
     */
    static List<JsonNode> runtimeJson(List<Expression> filters) {
        List<JsonNode> out = new java.util.ArrayList<>();
        for (Expression e : filters) {
            Expression inner = e instanceof DynamicPruningExpression d ? d.child() : e;
            if (!(inner instanceof InSubqueryExec in) || !(in.child() instanceof AttributeReference a)) continue;
            scala.Option<Object[]> values = in.values();
            if (values.isEmpty() || values.get().length > MAX_RUNTIME_VALUES) continue;
            ArrayNode list = F.arrayNode();
            boolean ok = true;
            for (Object v : values.get()) {
                JsonNode j = v == null ? null : value(v, a.dataType());
                if (j == null) {
                    ok = v == null;  // a NULL join key matches nothing; any other unknown value: no pruning
                    if (!ok) break;
                    continue;
                }
                list.add(j);
            }
            if (!ok) continue;
            ObjectNode f = F.objectNode().put("op", "in").put("column", a.name());
            f.set("values", list);
            out.add(f);
        }
        return out;
    }

    static JsonNode json(Expression e) {
        if (e instanceof And a) return junction("and", a.left(), a.right());
        if (e instanceof Or o) return junction("or", o.left(), o.right());
        if (e instanceof Not n) return F.objectNode().put("op", "not").set("child", json(n.child()));
        if (e instanceof IsNull n && n.child() instanceof AttributeReference a) {
            return F.objectNode().put("op", "is_null").put("column", a.name());
        }
        if (e instanceof IsNotNull n && n.child() instanceof AttributeReference a) {
            return F.objectNode().put("op", "is_not_null").put("column", a.name());
        }
        if (e instanceof Literal l && l.dataType() instanceof BooleanType && l.value() != null) {
            return F.objectNode().put("op", (Boolean) l.value() ? "true" : "false");
        }
        if (e instanceof In in && in.value() instanceof AttributeReference a) {
            ArrayNode values = F.arrayNode();
            for (Expression v : CollectionConverters.asJava(in.list())) {
                JsonNode j = v instanceof Literal l && l.value() != null ? value(l.value(), a.dataType()) : null;
                if (j == null) return unknown();
                values.add(j);
            }
            ObjectNode out = F.objectNode().put("op", "in").put("column", a.name());
            out.set("values", values);
            return out;
        }
        if (e instanceof InSet in && in.child() instanceof AttributeReference a) {
            ArrayNode values = F.arrayNode();
            for (Object v : CollectionConverters.asJava(in.hset())) {
                JsonNode j = v == null ? null : value(v, a.dataType());
                if (j == null) return unknown();
                values.add(j);
            }
            ObjectNode out = F.objectNode().put("op", "in").put("column", a.name());
            out.set("values", values);
            return out;
        }
        if (e instanceof BinaryComparison c) {
            String op = op(c);
            boolean flipped = c.right() instanceof AttributeReference && c.left() instanceof Literal;
            Expression attr = flipped ? c.right() : c.left();
            Expression lit = flipped ? c.left() : c.right();
            if (op != null && attr instanceof AttributeReference a && lit instanceof Literal l) {
                if (l.value() == null) {
                    return c instanceof EqualNullSafe ? F.objectNode().put("op", "is_null").put("column", a.name())
                            : F.objectNode().put("op", "false");
                }
                JsonNode v = value(l.value(), a.dataType());
                if (v == null) return unknown();
                ObjectNode out = F.objectNode().put("op", flipped ? flip(op) : op).put("column", a.name());
                out.set("value", v);
                return out;
            }
        }
        return unknown();
    }

    private static ObjectNode junction(String op, Expression left, Expression right) {
        ObjectNode out = F.objectNode().put("op", op);
        out.putArray("children").add(json(left)).add(json(right));
        return out;
    }

    private static ObjectNode unknown() {
        return F.objectNode().put("op", "unknown");
    }

    private static String op(BinaryComparison c) {
        if (c instanceof EqualTo || c instanceof EqualNullSafe) return "eq";
        if (c instanceof LessThan) return "lt";
        if (c instanceof LessThanOrEqual) return "le";
        if (c instanceof GreaterThan) return "gt";
        if (c instanceof GreaterThanOrEqual) return "ge";
        return null;
    }

    private static String flip(String op) {
        return switch (op) {
            case "lt" -> "gt";
            case "le" -> "ge";
            case "gt" -> "lt";
            case "ge" -> "le";
            default -> op;
        };
    }

    /** A literal's internal value as the JSON the catalog reads for a column of type {@code t}, or null. */
    private static JsonNode value(Object v, DataType t) {
        if (t instanceof StringType && v instanceof UTF8String s) return F.textNode(s.toString());
        if ((t instanceof IntegerType || t instanceof ShortType || t instanceof ByteType) && v instanceof Number n) {
            return F.numberNode(n.intValue());
        }
        if (t instanceof LongType && v instanceof Number n) return F.numberNode(n.longValue());
        if (t instanceof BooleanType && v instanceof Boolean b) return F.booleanNode(b);
        if (t instanceof DateType && v instanceof Integer d) return F.objectNode().put("days", d);
        if ((t instanceof TimestampType || t instanceof TimestampNTZType) && v instanceof Long us) {
            return F.objectNode().put("micros", us);
        }
        if (t instanceof DecimalType && v instanceof Decimal d) return F.textNode(d.toJavaBigDecimal().toPlainString());
        return null;
    }

    /**
     * Spark's own evaluation of {@code filters} over partition values (rows of {@code schema}), as
     * {@code PartitioningAwareFileIndex.prunePartitions} does; null when there are no filters.
     */
    static InterpretedPredicate predicate(List<Expression> filters, StructType schema) {
        if (filters.isEmpty()) return null;
        Expression all = filters.get(0);
        for (int i = 1; i < filters.size(); i++) all = new And(all, filters.get(i));
        Expression bound = (Expression) all.transform(new AbstractPartialFunction<Expression, Expression>() {
            @Override
            public boolean isDefinedAt(Expression x) {
                return x instanceof AttributeReference;
            }

            @Override
            public <A1 extends Expression, B1> B1 applyOrElse(A1 x, Function1<A1, B1> fallback) {
                if (!(x instanceof AttributeReference a)) return fallback.apply(x);
                int index = schema.getFieldIndex(a.name()).getOrElse(() -> -1);
                if (index < 0) {
                    for (int i = 0; i < schema.length(); i++) {
                        if (schema.fields()[i].name().equalsIgnoreCase(a.name())) index = i;
                    }
                }
                if (index < 0) {
                    throw new IllegalStateException("partition filter column " + a.name() + " is not a partition column");
                }
                @SuppressWarnings("unchecked")
                B1 out = (B1) new BoundReference(index, schema.fields()[index].dataType(), true);
                return out;
            }
        });
        InterpretedPredicate p = Predicate$.MODULE$.createInterpreted(bound);
        p.initialize(0);
        return p;
    }

    static boolean keep(InterpretedPredicate p, InternalRow row) {
        return p == null || p.eval(row);
    }
}
