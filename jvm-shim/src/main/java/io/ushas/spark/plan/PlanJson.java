package io.ushas.spark.plan;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.AliasIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.JoinType;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.WithCTE;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.execution.columnar.CachedRDDBuilder;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataType;

/**
 * Serializes an analyzed {@link LogicalPlan} to the compact plan JSON (format "ushas-plan",
 * version {@link #VERSION}; documented in docs/internals/plan-json.md). It only serializes: node kinds,
 * output attributes, every expression-typed constructor field as a flat expression tree, scalar
 * constructor fields, relation identities, non-child plan fields and subquery plans. All
 * interpretation happens in Python (lineage.plan / lineage.resolve).
 *
 * <p>Nodes and expressions are written in post-order into flat arrays (children before parents,
 * CTE definitions before the plan that references them, children before the subquery plans that
 * correlate to them); traversal uses explicit stacks, so arbitrarily deep plans never overflow.
 * One instance serializes one plan; it is not thread-safe.
 */
public final class PlanJson {
    public static final int VERSION = 2;

    private final Json nodes = new Json(1 << 12);
    private final Json exprs = new Json(1 << 12);
    private final Json attrs = new Json(1 << 11);
    private final Json outputs = new Json(1 << 10);
    private final Map<Class<?>, Integer> kinds = new IdentityHashMap<>(64);
    private final Map<String, Integer> kindByName = new HashMap<>(128);
    private final List<String> kindList = new ArrayList<>();
    /** exprId -> the attributes of that exprId written so far: {name, type, index}. */
    private final Map<Long, List<Object[]>> attrIndex = new HashMap<>(256);
    private final IdentityHashMap<DataType, String> typeNames = new IdentityHashMap<>();
    private final Map<Ints, Integer> outputIndex = new HashMap<>(128);
    /** Output Seqs and attributes already seen, by identity (a Filter's output IS its child's).
     * Maps are sized for a few hundred plan nodes: growing them was a tenth of a TPC-H walk. */
    private final IdentityHashMap<Object, Integer> outputBySeq = new IdentityHashMap<>(128);
    private final IdentityHashMap<Attribute, Integer> attrByRef = new IdentityHashMap<>(256);
    private int attrCount;
    private final IdentityHashMap<LogicalPlan, Integer> planIndex = new IdentityHashMap<>(128);
    private final IdentityHashMap<LogicalPlan, Boolean> visiting = new IdentityHashMap<>(128);
    /** plan node -> the index of its output list in "outputs" */
    private final IdentityHashMap<LogicalPlan, Integer> outputOfPlan = new IdentityHashMap<>(128);
    private final boolean askSpark;
    private int nodeCount;
    private int exprCount;

    private PlanJson(boolean askSpark) {
        this.askSpark = askSpark;
    }

    /** The plan JSON of {@code plan}. */
    public static String write(LogicalPlan plan) {
        return write(plan, false);
    }

    /** {@link #write}, asking Spark for the output of every node (no {@link #CHILD_OUTPUT}
     * shortcut): the same JSON, slower; for tests. */
    public static String writeAskingSpark(LogicalPlan plan) {
        return write(plan, true);
    }

    private static String write(LogicalPlan plan, boolean askSpark) {
        PlanJson w = new PlanJson(askSpark);
        int root = w.walk(plan);
        Json doc = new Json(w.nodes.out.length() + w.exprs.out.length() + 256);
        doc.ch('{').key("format").str("ushas-plan").ch(',').key("version").num(VERSION).ch(',');
        doc.key("spark").str(org.apache.spark.package$.MODULE$.SPARK_VERSION()).ch(',');
        doc.key("kinds").ch('[');
        for (String k : w.kindList) {
            doc.str(k).ch(',');
        }
        doc.trim().ch(']').ch(',');
        doc.key("attrs").ch('[').raw(w.attrs.trim()).ch(']').ch(',');
        doc.key("outputs").ch('[').raw(w.outputs.trim()).ch(']').ch(',');
        doc.key("exprs").ch('[').raw(w.exprs.trim()).ch(']').ch(',');
        doc.key("nodes").ch('[').raw(w.nodes.trim()).ch(']').ch(',');
        doc.key("root").num(root).ch('}');
        return doc.toString();
    }

    private int kind(Object o) {
        Class<?> cls = o.getClass();
        Integer k = kinds.get(cls);
        if (k == null) {
            String name = simpleName(cls);
            k = kindByName.get(name); // two classes of one simple name share the kind
            if (k == null) {
                k = kindList.size();
                kindList.add(name);
                kindByName.put(name, k);
            }
            kinds.put(cls, k);
        }
        return k;
    }

    /** Simple class names without Scala's trailing '$', computed once per class for the JVM's
     * life; copy-on-write (read without locks, written a few dozen times per JVM). */
    private static volatile Map<Class<?>, String> simpleNames = new IdentityHashMap<>();

    private static String simpleName(Class<?> cls) {
        String known = simpleNames.get(cls);
        if (known == null) {
            String name = cls.getSimpleName();
            known = name.endsWith("$") ? name.substring(0, name.length() - 1) : name;
            synchronized (PlanJson.class) {
                Map<Class<?>, String> copy = new IdentityHashMap<>(simpleNames);
                copy.put(cls, known);
                simpleNames = copy;
            }
        }
        return known;
    }

    // ---- plan traversal ---------------------------------------------------------------------

    /** Plans to write before {@code plan}, in the order they must be written. */
    private List<LogicalPlan> before(LogicalPlan plan) {
        List<LogicalPlan> out = new ArrayList<>();
        if (plan instanceof WithCTE) {
            WithCTE w = (WithCTE) plan;
            for (LogicalPlan def : iter(w.cteDefs())) {
                out.add(def);
            }
            out.add(w.plan());
        } else {
            for (LogicalPlan child : iter(plan.children())) {
                out.add(child);
            }
        }
        scala.Product p = plan;
        for (int i = 0, n = p.productArity(); i < n; i++) {
            Object v = unwrap(p.productElement(i));
            if (v instanceof LogicalPlan && !isChild(plan, v)) {
                out.add((LogicalPlan) v);
            } else if (v instanceof CachedRDDBuilder) {
                out.add(((CachedRDDBuilder) v).logicalPlan());
            }
        }
        for (Expression e : iter(plan.expressions())) {
            // Spark's cached tree-pattern bits: only a tree holding a PlanExpression (every
            // SubqueryExpression is one) is searched
            if (e.containsPattern(PLAN_EXPRESSION)) {
                collectSubqueries(e, out);
            }
        }
        return out;
    }

    private static void collectSubqueries(Expression root, List<LogicalPlan> out) {
        ArrayDeque<Expression> stack = new ArrayDeque<>();
        stack.push(root);
        while (!stack.isEmpty()) {
            Expression e = stack.pop();
            if (e instanceof SubqueryExpression) {
                out.add(((SubqueryExpression) e).plan());
            }
            for (Expression c : iter(e.children())) {
                stack.push(c);
            }
        }
    }

    private static boolean isChild(LogicalPlan plan, Object v) {
        for (LogicalPlan c : iter(plan.children())) {
            if (c == v) {
                return true;
            }
        }
        return false;
    }

    private int walk(LogicalPlan root) {
        ArrayDeque<Object[]> stack = new ArrayDeque<>();
        stack.push(new Object[] {root, Boolean.FALSE});
        while (!stack.isEmpty()) {
            Object[] top = stack.pop();
            LogicalPlan plan = (LogicalPlan) top[0];
            if (planIndex.containsKey(plan)) {
                continue;
            }
            if (top[1] == Boolean.TRUE) {
                emitNode(plan);
                continue;
            }
            if (visiting.containsKey(plan)) {
                continue;
            }
            visiting.put(plan, Boolean.TRUE);
            stack.push(new Object[] {plan, Boolean.TRUE});
            List<LogicalPlan> pre = before(plan);
            for (int i = pre.size() - 1; i >= 0; i--) {
                if (!planIndex.containsKey(pre.get(i))) {
                    stack.push(new Object[] {pre.get(i), Boolean.FALSE});
                }
            }
        }
        return planIndex.get(root);
    }

    private void emitNode(LogicalPlan plan) {
        Json j = nodes;
        j.ch('{').key("k").num(kind(plan)).ch(',');
        j.key("c").ch('[');
        for (LogicalPlan c : iter(plan.children())) {
            Integer ci = planIndex.get(c);
            j.num(ci == null ? -1 : ci).ch(',');
        }
        j.trim().ch(']').ch(',');
        j.key("o").num(output(plan));
        Json x = new Json(64);
        Json a = new Json(64);
        Json p = new Json(16);
        scala.Product prod = plan;
        for (int i = 0, n = prod.productArity(); i < n; i++) {
            String name = prod.productElementName(i);
            if ("output".equals(name)) {
                continue;
            }
            field(plan, name, prod.productElement(i), x, a, p);
        }
        if (x.out.length() > 0) {
            j.ch(',').key("x").ch('{').raw(x.trim()).ch('}');
        }
        if (a.out.length() > 0) {
            j.ch(',').key("a").ch('{').raw(a.trim()).ch('}');
        }
        if (p.out.length() > 0) {
            j.ch(',').key("p").ch('{').raw(p.trim()).ch('}');
        }
        j.ch('}').ch(',');
        planIndex.put(plan, nodeCount++);
    }

    /**
     * Plan classes whose {@code output} is, by Spark's definition, their (last) child's output with
     * at most the qualifier or the nullability changed, neither of which the JSON carries (checked
     * against the bytecode of Spark 4.3: {@code child.output}, {@code child.output.map(_.withQualifier)},
     * {@code widenOutputForStatefulOp(child.output)}; WithCTE: {@code plan.output}, its last child).
     * Their output list is their child's, already written: asking Spark would recompute the
     * child's output, and its child's, down to the first Project / Aggregate / relation (a third
     * of a TPC-H walk went there). {@link #writeAskingSpark} skips this (tests compare both).
     */
    private static final java.util.Set<Class<?>> CHILD_OUTPUT = java.util.Set.of(
            org.apache.spark.sql.catalyst.plans.logical.Filter.class,
            org.apache.spark.sql.catalyst.plans.logical.Sort.class,
            org.apache.spark.sql.catalyst.plans.logical.GlobalLimit.class,
            org.apache.spark.sql.catalyst.plans.logical.LocalLimit.class,
            org.apache.spark.sql.catalyst.plans.logical.Offset.class,
            org.apache.spark.sql.catalyst.plans.logical.Tail.class,
            org.apache.spark.sql.catalyst.plans.logical.Sample.class,
            org.apache.spark.sql.catalyst.plans.logical.Distinct.class,
            org.apache.spark.sql.catalyst.plans.logical.Deduplicate.class,
            org.apache.spark.sql.catalyst.plans.logical.DeduplicateWithinWatermark.class,
            org.apache.spark.sql.catalyst.plans.logical.Repartition.class,
            org.apache.spark.sql.catalyst.plans.logical.RepartitionByExpression.class,
            org.apache.spark.sql.catalyst.plans.logical.RebalancePartitions.class,
            org.apache.spark.sql.catalyst.plans.logical.ResolvedHint.class,
            org.apache.spark.sql.catalyst.plans.logical.Subquery.class,
            org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias.class,
            WithCTE.class);

    /** The index in "outputs" of the plan's output list (equal lists are written once). */
    private int output(LogicalPlan plan) {
        if (!askSpark && CHILD_OUTPUT.contains(plan.getClass()) && !plan.children().isEmpty()) {
            Integer same = outputOfPlan.get(plan.children().last());
            if (same != null) {
                outputOfPlan.put(plan, same);
                return same;
            }
        }
        int idx = outputAskingSpark(plan);
        outputOfPlan.put(plan, idx);
        return idx;
    }

    private int outputAskingSpark(LogicalPlan plan) {
        int[] ids;
        scala.collection.Seq<Attribute> out = null;
        try {
            out = plan.output();
            Integer seen = outputBySeq.get(out);
            if (seen != null) {
                return seen;
            }
            ids = new int[out.size()];
            int i = 0;
            for (Attribute a : iter(out)) {
                ids[i++] = attribute(a);
            }
        } catch (RuntimeException unresolved) {
            ids = new int[0]; // unresolved or output-less node: the Python side reports it
        }
        Ints key = new Ints(ids);
        Integer idx = outputIndex.get(key);
        if (idx == null) {
            idx = outputIndex.size();
            outputIndex.put(key, idx);
            outputs.ch('[');
            for (int id : ids) {
                outputs.num(id).ch(',');
            }
            outputs.trim().ch(']').ch(',');
        }
        if (out != null) {
            outputBySeq.put(out, idx);
        }
        return idx;
    }

    /** The index in "attrs" of {@code [name, exprId, type]} (each distinct attribute written once). */
    private int attribute(Attribute a) {
        Integer known = attrByRef.get(a);
        if (known == null) {
            known = newAttribute(a);
            attrByRef.put(a, known);
        }
        return known;
    }

    private int newAttribute(Attribute a) {
        long id = a.exprId().id();
        String name = a.name();
        DataType dt = a.dataType();
        String type = typeNames.get(dt);
        if (type == null) {
            type = dt.catalogString();
            typeNames.put(dt, type);
        }
        List<Object[]> same = attrIndex.computeIfAbsent(id, x -> new ArrayList<>(1));
        for (Object[] known : same) {
            if (known[0].equals(name) && known[1].equals(type)) {
                return (Integer) known[2];
            }
        }
        int idx = attrCount++;
        same.add(new Object[] {name, type, idx});
        attrs.ch('[').str(name).ch(',').num(id).ch(',').str(type).ch(']').ch(',');
        return idx;
    }

    /** An int[] with value equality (key of the output-list table). */
    private static final class Ints {
        private final int[] values;
        private final int hash;

        Ints(int[] values) {
            this.values = values;
            this.hash = java.util.Arrays.hashCode(values);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Ints && java.util.Arrays.equals(values, ((Ints) o).values);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    // ---- constructor fields -----------------------------------------------------------------

    private void field(LogicalPlan plan, String name, Object raw, Json x, Json a, Json p) {
        Object v = unwrap(raw);
        if (v == null) {
            return;
        }
        if (v instanceof Expression) {
            x.key(name).num(expression((Expression) v)).ch(',');
        } else if (v instanceof LogicalPlan) {
            if (!isChild(plan, v)) {
                Integer idx = planIndex.get(v);
                if (idx != null) {
                    p.key(name).num(idx).ch(',');
                }
            }
        } else if (v instanceof CachedRDDBuilder) {
            Integer idx = planIndex.get(((CachedRDDBuilder) v).logicalPlan());
            if (idx != null) {
                p.key("cachedPlan").num(idx).ch(',');
            }
        } else if (v instanceof scala.collection.Map) {
            pathOptions(name, (scala.collection.Map<?, ?>) v, a);
        } else if (v instanceof scala.collection.Iterable && "userSpecifiedColumns".equals(name)) {
            viewColumns(name, (scala.collection.Iterable<?>) v, a);
        } else if (v instanceof scala.collection.Iterable) {
            seqField(name, (scala.collection.Iterable<?>) v, x, a);
        } else {
            int mark = a.out.length();
            a.key(name);
            if (!scalar(a, v)) {
                a.out.setLength(mark);
            } else {
                a.ch(',');
            }
        }
    }

    /** A view's column list ({@code CREATE VIEW v (a, b COMMENT '...')}): the names. */
    private static void viewColumns(String name, scala.collection.Iterable<?> seq, Json a) {
        a.key(name).ch('[');
        for (Object o : iter(seq)) {
            Object first = o instanceof scala.Tuple2 ? ((scala.Tuple2<?, ?>) o)._1() : o;
            a.str(String.valueOf(first)).ch(',');
        }
        a.trim().ch(']').ch(',');
    }

    /** Of a Map field (data source options), only the keys naming what is read or written. */
    private static void pathOptions(String name, scala.collection.Map<?, ?> map, Json a) {
        Json j = new Json(64);
        scala.collection.Iterator<?> it = map.iterator();
        while (it.hasNext()) {
            scala.Tuple2<?, ?> kv = (scala.Tuple2<?, ?>) it.next();
            String k = String.valueOf(kv._1()).toLowerCase(java.util.Locale.ROOT);
            if (k.equals("path") || k.equals("paths") || k.equals("table") || k.equals("dbtable")) {
                j.key(k).str(String.valueOf(kv._2())).ch(',');
            }
        }
        if (j.out.length() > 0) {
            a.key(name).ch('{').key("t").str("Options").ch(',').raw(j.trim()).ch('}').ch(',');
        }
    }

    /** A Seq field: of expressions (x), of Seq of expressions (x, nested), or of scalars (a). */
    private void seqField(String name, scala.collection.Iterable<?> seq, Json x, Json a) {
        List<Object> items = new ArrayList<>();
        for (Object o : iter(seq)) {
            items.add(unwrap(o));
        }
        boolean exprs = true;
        boolean nested = true;
        for (Object o : items) {
            exprs &= o instanceof Expression;
            nested &= o instanceof scala.collection.Seq;
        }
        if (items.isEmpty() || exprs) {
            x.key(name).ch('[');
            for (Object o : items) {
                x.num(expression((Expression) o)).ch(',');
            }
            x.trim().ch(']').ch(',');
            return;
        }
        if (nested) {
            boolean allExpr = true;
            for (Object o : items) {
                for (Object e : iter((scala.collection.Seq<?>) o)) {
                    allExpr &= e instanceof Expression;
                }
            }
            if (allExpr) {
                x.key(name).ch('[');
                for (Object o : items) {
                    x.ch('[');
                    for (Object e : iter((scala.collection.Seq<?>) o)) {
                        x.num(expression((Expression) e)).ch(',');
                    }
                    x.trim().ch(']').ch(',');
                }
                x.trim().ch(']').ch(',');
                return;
            }
        }
        int mark = a.out.length();
        a.key(name).ch('[');
        for (Object o : items) {
            if (o instanceof LogicalPlan) {
                continue; // children (e.g. cteDefs) are in "c"
            }
            int m = a.out.length();
            if (scalar(a, o)) {
                a.ch(',');
            } else {
                a.out.setLength(m);
            }
        }
        a.trim().ch(']').ch(',');
        if (a.out.length() == mark + name.length() + 6) { // "name":[], -> nothing scalar
            a.out.setLength(mark);
        }
    }

    /** Writes a scalar / identity value; false when the value is of no interest. */
    private static boolean scalar(Json a, Object v) {
        if (v instanceof String) {
            String s = (String) v;
            a.str(s.length() > 4096 ? s.substring(0, 4096) : s);
        } else if (v instanceof Boolean) {
            a.raw(v.toString());
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
            a.num(((Number) v).longValue());
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                a.str(Double.toString(d));
            } else {
                a.raw(Double.toString(d));
            }
        } else if (v instanceof JoinType) {
            a.str(((JoinType) v).sql());
        } else if (v instanceof ExprId) {
            a.num(((ExprId) v).id());
        } else if (v instanceof CatalogTable) {
            catalogTable(a, (CatalogTable) v);
        } else if (v instanceof TableIdentifier) {
            tableIdentifier(a, (TableIdentifier) v);
        } else if (v instanceof Identifier) {
            identifier(a, (Identifier) v);
        } else if (v instanceof CatalogPlugin) {
            a.ch('{').key("t").str("CatalogPlugin").ch(',').key("name").str(((CatalogPlugin) v).name()).ch('}');
        } else if (v instanceof Table) {
            a.ch('{').key("t").str("Table").ch(',').key("name").str(tableName((Table) v)).ch('}');
        } else if (v instanceof HadoopFsRelation) {
            HadoopFsRelation r = (HadoopFsRelation) v;
            a.ch('{').key("t").str("HadoopFsRelation").ch(',').key("format").str(format(r.fileFormat())).ch(',');
            a.key("paths").ch('[');
            for (Object path : iter(r.location().rootPaths())) {
                a.str(path.toString()).ch(',');
            }
            a.trim().ch(']');
            // a file stream's micro-batch reads the batch's files with the stream's directory as basePath
            scala.Option<String> base = r.options().get("basePath");
            if (base.isDefined()) a.ch(',').key("base_path").str(base.get());
            a.ch('}');
        } else if (v instanceof BaseRelation) {
            a.ch('{').key("t").str("BaseRelation").ch(',').key("class").str(v.getClass().getName()).ch('}');
        } else if (v instanceof FileFormat) {
            a.ch('{').key("t").str("FileFormat").ch(',').key("format").str(format((FileFormat) v)).ch('}');
        } else if (v instanceof FileIndex) {
            a.ch('{').key("t").str("FileIndex").ch(',').key("paths").ch('[');
            for (Object path : iter(((FileIndex) v).rootPaths())) {
                a.str(path.toString()).ch(',');
            }
            a.trim().ch(']').ch('}');
        } else if (v instanceof org.apache.hadoop.fs.Path) {
            a.ch('{').key("t").str("Path").ch(',').key("path").str(v.toString()).ch('}');
        } else if (v instanceof AliasIdentifier) {
            AliasIdentifier id = (AliasIdentifier) v;
            a.ch('{').key("t").str("AliasIdentifier").ch(',').key("name").str(id.name()).ch(',').key("qualifier").ch('[');
            for (String q : iter(id.qualifier())) {
                a.str(q).ch(',');
            }
            a.trim().ch(']').ch('}');
        } else if (v instanceof org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat) {
            scala.Option<java.net.URI> loc = ((org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat) v).locationUri();
            a.ch('{').key("t").str("CatalogStorageFormat").ch(',').key("location").str(loc.isDefined() ? loc.get().toString() : null).ch('}');
        } else if (v instanceof DataSourceRegister) {
            a.ch('{').key("t").str("DataSource").ch(',').key("format").str(((DataSourceRegister) v).shortName()).ch('}');
        } else if (v instanceof org.apache.spark.sql.connector.expressions.filter.Predicate pr) {
            // a V2 predicate (DeleteFromTableWithFilters' condition): its SQL and the columns it reads
            a.ch('{').key("t").str("Predicate").ch(',').key("sql").str(pr.toString()).ch(',').key("columns").ch('[');
            for (org.apache.spark.sql.connector.expressions.NamedReference r : pr.references()) {
                a.str(String.join(".", r.fieldNames())).ch(',');
            }
            a.trim().ch(']').ch('}');
        } else if (v instanceof org.apache.spark.sql.SaveMode) {
            a.str(v.toString());
        } else if (v instanceof scala.Enumeration.Value) {
            a.str(v.toString());
        } else if (v instanceof org.apache.spark.sql.catalyst.analysis.ViewType) {
            a.str(simpleName(v.getClass())); // LocalTempView, GlobalTempView, PersistedView
        } else {
            return false;
        }
        return true;
    }

    private static String format(FileFormat f) {
        return f instanceof DataSourceRegister ? ((DataSourceRegister) f).shortName() : f.toString();
    }

    /** A table's name; a streaming V1 sink (foreachBatch's {@code ForeachBatchSink}) is a {@link Table}
     * whose {@code name()} throws "should not be called.": its class name then. */
    private static String tableName(Table t) {
        try {
            return t.name();
        } catch (IllegalStateException | UnsupportedOperationException e) {
            return t.getClass().getSimpleName();
        }
    }

    private static void catalogTable(Json a, CatalogTable t) {
        a.ch('{').key("t").str("CatalogTable").ch(',');
        a.key("identifier");
        tableIdentifier(a, t.identifier());
        a.ch(',').key("tableType").str(t.tableType().name()).ch(',');
        if (t.provider().isDefined()) {
            a.key("provider").str(t.provider().get()).ch(',');
        }
        try {
            if (t.storage().locationUri().isDefined()) {
                a.key("location").str(t.storage().locationUri().get().toString()).ch(',');
            }
        } catch (RuntimeException ignored) {
            // no location
        }
        a.trim().ch('}');
    }

    private static void tableIdentifier(Json a, TableIdentifier id) {
        a.ch('{').key("t").str("TableIdentifier").ch(',');
        if (id.catalog().isDefined()) {
            a.key("catalog").str(id.catalog().get()).ch(',');
        }
        if (id.database().isDefined()) {
            a.key("database").str(id.database().get()).ch(',');
        }
        a.key("table").str(id.table()).ch('}');
    }

    private static void identifier(Json a, Identifier id) {
        a.ch('{').key("t").str("Identifier").ch(',').key("namespace").ch('[');
        for (String ns : id.namespace()) {
            a.str(ns).ch(',');
        }
        a.trim().ch(']').ch(',').key("name").str(id.name()).ch('}');
    }

    // ---- expressions ------------------------------------------------------------------------

    /** Writes the expression tree rooted at {@code root} (post-order); returns the root's index. */
    private int expression(Expression root) {
        ArrayDeque<Object[]> stack = new ArrayDeque<>();
        ArrayDeque<Integer> results = new ArrayDeque<>();
        boolean aliased = false;
        stack.push(new Object[] {root, Boolean.FALSE});
        while (!stack.isEmpty()) {
            Object[] top = stack.pop();
            Expression e = (Expression) top[0];
            if (top[1] == Boolean.FALSE) {
                stack.push(new Object[] {e, Boolean.TRUE});
                List<Expression> cs = new ArrayList<>();
                for (Expression c : iter(e.children())) {
                    cs.add(c);
                }
                for (int i = cs.size() - 1; i >= 0; i--) {
                    stack.push(new Object[] {cs.get(i), Boolean.FALSE});
                }
                continue;
            }
            aliased |= !e.isTagsEmpty() && e.containsTag(FUNC_ALIAS);
            int n = e.children().size();
            int[] childIdx = new int[n];
            for (int i = n - 1; i >= 0; i--) {
                childIdx[i] = results.pop();
            }
            long id = 0;
            String name = null;
            if (e instanceof NamedExpression) {
                try {
                    NamedExpression ne = (NamedExpression) e;
                    id = ne.exprId().id();
                    name = ne.name();
                } catch (RuntimeException ignored) {
                    // unresolved: no exprId
                }
            }
            if (e instanceof org.apache.spark.sql.catalyst.expressions.GetStructField) {
                // the field taken, by ordinal, in the name slot (no exprId)
                name = String.valueOf(((org.apache.spark.sql.catalyst.expressions.GetStructField) e).ordinal());
            } else if (e instanceof org.apache.spark.sql.catalyst.expressions.WithField) {
                // withField / dropFields (UpdateFields' operations): the field named, in the name slot
                name = ((org.apache.spark.sql.catalyst.expressions.WithField) e).name();
            } else if (e instanceof org.apache.spark.sql.catalyst.expressions.DropField) {
                name = ((org.apache.spark.sql.catalyst.expressions.DropField) e).name();
            }
            Integer sq = e instanceof SubqueryExpression ? planIndex.get(((SubqueryExpression) e).plan()) : null;
            String t = e == root ? text(e, aliased) : null;
            // [kind, children, exprId, name, subquery plan, text], trailing absent fields left out
            int last = t != null ? 5 : sq != null ? 4 : name != null ? 3 : n > 0 ? 1 : 0;
            Json j = exprs;
            j.ch('[').num(kind(e));
            if (last >= 1) {
                j.ch(',').ch('[');
                for (int c : childIdx) {
                    j.num(c).ch(',');
                }
                j.trim().ch(']');
            }
            if (last >= 3) {
                if (name != null && e instanceof NamedExpression) {
                    j.ch(',').num(id).ch(',').str(name);
                } else if (name != null) {
                    j.raw(",null,").str(name);
                } else {
                    j.raw(",null,null");
                }
            }
            if (last >= 4) {
                j.ch(',');
                if (sq != null) {
                    j.num(sq);
                } else {
                    j.raw("null");
                }
            }
            if (last >= 5) {
                j.ch(',').str(t);
            }
            j.ch(']').ch(',');
            results.push(exprCount++);
        }
        return results.pop();
    }

    private static final scala.Enumeration.Value PLAN_EXPRESSION =
            org.apache.spark.sql.catalyst.trees.TreePattern.PLAN_EXPRESSION();

    private static final org.apache.spark.sql.catalyst.trees.TreeNodeTag<String> FUNC_ALIAS =
            org.apache.spark.sql.catalyst.analysis.FunctionRegistry.FUNC_ALIAS();

    /**
     * Spark's rendering of a top-level expression with canonical function names: a function
     * called through an alias (substr, ucase, mean...) carries the FUNC_ALIAS tag, which its
     * prettyName prefers; such trees are rendered from a deep copy without the tag, so
     * {@code substr(x, 0, 1)} reads {@code substring(x, 0, 1)} (the plan itself is not touched).
     */
    private static String text(Expression e, boolean aliased) {
        if (!aliased) {
            return e.toString();
        }
        Expression copy;
        try {
            copy = (Expression) e.clone();
        } catch (RuntimeException notCopyable) {
            return e.toString();
        }
        ArrayDeque<Expression> stack = new ArrayDeque<>();
        stack.push(copy);
        while (!stack.isEmpty()) {
            Expression x = stack.pop();
            x.unsetTagValue(FUNC_ALIAS);
            for (Expression c : iter(x.children())) {
                stack.push(c);
            }
        }
        return copy.toString();
    }

    // ---- Scala helpers ----------------------------------------------------------------------

    private static Object unwrap(Object v) {
        while (v instanceof scala.Option) {
            scala.Option<?> o = (scala.Option<?>) v;
            v = o.isDefined() ? o.get() : null;
        }
        return v;
    }

    private static <T> Iterable<T> iter(scala.collection.Iterable<? extends T> seq) {
        scala.collection.Iterator<? extends T> it = seq.iterator();
        return () -> new java.util.Iterator<T>() {
            @Override
            public boolean hasNext() {
                return it.hasNext();
            }

            @Override
            public T next() {
                return it.next();
            }
        };
    }
}
