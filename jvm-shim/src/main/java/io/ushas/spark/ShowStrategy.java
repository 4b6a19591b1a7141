package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.ResolvedNamespace;
import org.apache.spark.sql.catalyst.analysis.ResolvedPartitionSpec;
import org.apache.spark.sql.catalyst.analysis.ResolvedPersistentView;
import org.apache.spark.sql.catalyst.analysis.ResolvedTable;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ShowCreateTable;
import org.apache.spark.sql.catalyst.plans.logical.ShowTablePartition;
import org.apache.spark.sql.catalyst.plans.logical.ShowTables;
import org.apache.spark.sql.catalyst.plans.logical.ShowTablesExtended;
import org.apache.spark.sql.catalyst.plans.logical.ShowViews;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.LocalTableScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * SHOW TABLES / SHOW VIEWS [IN db] [LIKE pattern] of an Ushas namespace as the session catalog lists them:
 * the catalog's tables (views) that Spark's own V2 planning lists, then the session's local temporary views
 * matching the pattern ({@code namespace} empty, {@code isTemporary} true), which Spark's V2 commands leave
 * out. SHOW TABLE EXTENDED [… PARTITION (…)] lists the catalog's tables and views with the information the
 * session catalog prints (Spark's V2 command lists tables only, with its own layout). SHOW CREATE TABLE of an Ushas table or view names it as it is stored (lower case), as the session
 * catalog does, not as the statement spelled it, and a bucketed table with {@code CLUSTERED BY … [SORTED BY …]
 * INTO n BUCKETS} (Spark writes {@code CLUSTERED BY} only for its V1 tables). Installed by {@link UshasExtensions}.
 */
final class ShowStrategy extends SparkStrategy {
    /** set while Spark's own strategies plan the catalog's rows */
    private static final ThreadLocal<Boolean> INNER = ThreadLocal.withInitial(() -> false);
    private final SparkSession session;

    ShowStrategy(SparkSession session) {
        this.session = session;
    }

    @Override
    public scala.collection.immutable.Seq<SparkPlan> apply(LogicalPlan plan) {
        if (INNER.get()) return none();
        if (plan instanceof ShowCreateTable s) return showCreate(s);
        if (plan instanceof ShowTablesExtended s && ushas(s.namespace()) && !system(s.namespace())) {
            return showExtended(s);  // the system tables: Spark's own V2 listing
        }
        if (plan instanceof ShowTablePartition s && s.table() instanceof ResolvedTable t
                && t.catalog() instanceof UshasCatalog c && t.table() instanceof UshasTable u
                && s.partitionSpec() instanceof ResolvedPartitionSpec spec) {
            ObjectNode r = c.request(t.identifier());
            r.put("what", "show_extended");
            r.set("partition", Rows.toJson(spec.ident(), u.partitionSchema()));
            String information = c.call("describe", r, t.identifier(), null).get("information").asText();
            List<InternalRow> rows = new ArrayList<>();
            for (InternalRow row : spark(plan)) {
                rows.add(new GenericInternalRow(new Object[] {row.getUTF8String(0).copy(), row.getUTF8String(1).copy(),
                    row.getBoolean(2), UTF8String.fromString(information)}));
            }
            return scan(s.output(), rows);
        }
        scala.Option<String> pattern;
        scala.collection.immutable.Seq<Attribute> output;
        if (plan instanceof ShowTables s && ushas(s.namespace())) {
            pattern = s.pattern();
            output = s.output();
        } else if (plan instanceof ShowViews s && ushas(s.namespace())) {
            pattern = s.pattern();
            output = s.output();
        } else {
            return none();
        }
        List<InternalRow> rows = new ArrayList<>();
        for (InternalRow row : spark(plan)) rows.add(row.copy());
        scala.collection.immutable.Seq<TableIdentifier> temps = session.sessionState().catalog()
                .listLocalTempViews(pattern.isDefined() ? pattern.get() : "*");
        for (TableIdentifier t : scala.jdk.javaapi.CollectionConverters.asJava(temps)) {
            String database = t.database().isDefined() ? t.database().get() : "";
            rows.add(new GenericInternalRow(new Object[] {
                UTF8String.fromString(database), UTF8String.fromString(t.table()), true}));
        }
        return scan(output, rows);
    }

    /** SHOW TABLE EXTENDED: the session's temporary views as Spark lists them, then the catalog's tables and
     *  views with the session catalog's information (Python's {@code show_extended}, and the schema tree). */
    private scala.collection.immutable.Seq<SparkPlan> showExtended(ShowTablesExtended s) {
        ResolvedNamespace n = (ResolvedNamespace) s.namespace();
        UshasCatalog c = (UshasCatalog) n.catalog();
        String[] namespace = scala.jdk.javaapi.CollectionConverters.asJava(n.namespace()).toArray(new String[0]);
        List<InternalRow> rows = new ArrayList<>();
        for (InternalRow row : spark(s)) {
            if (row.getBoolean(2)) rows.add(row.copy());  // temporary views
        }
        ObjectNode r = c.request(namespace);
        r.put("what", "show_extended");
        r.put("pattern", s.pattern());
        r.put("spark_version", session.version());
        r.put("schema_binding", session.conf().get("spark.sql.legacy.viewSchemaBindingMode", "true"));
        UTF8String database = UTF8String.fromString(String.join(".", namespace));
        for (JsonNode relation : c.call("describe", r, null, namespace).get("relations")) {
            String tree = ((StructType) DataType.fromJson(relation.get("schema").asText())).treeString();
            rows.add(new GenericInternalRow(new Object[] {database, UTF8String.fromString(relation.get("name").asText()),
                false, UTF8String.fromString(relation.get("information").asText() + "Schema: " + tree + "\n")}));
        }
        return scan(s.output(), rows);
    }

    /** The rows Spark's own planning gives {@code plan}. */
    private InternalRow[] spark(LogicalPlan plan) {
        INNER.set(true);
        try {
            return (InternalRow[]) session.sessionState().planner().plan(plan).next().executeCollect();
        } finally {
            INNER.set(false);
        }
    }

    private static scala.collection.immutable.Seq<SparkPlan> scan(scala.collection.immutable.Seq<Attribute> output,
                                                                 List<InternalRow> rows) {
        SparkPlan exec = new LocalTableScanExec(output,
                scala.jdk.javaapi.CollectionConverters.asScala(rows).toList(), scala.Option.empty(), false);
        return scala.collection.immutable.List$.MODULE$.<SparkPlan>empty().$colon$colon(exec);
    }

    /** SHOW CREATE TABLE planned by Spark with the stored (lower-case) name of the table or view. */
    private scala.collection.immutable.Seq<SparkPlan> showCreate(ShowCreateTable s) {
        LogicalPlan child;
        if (s.child() instanceof ResolvedTable t && t.catalog() instanceof UshasCatalog) {
            child = new ResolvedTable(t.catalog(), stored(t.identifier()), t.table(), t.outputAttributes());
            InternalRow[] rows = spark(new ShowCreateTable(child, s.asSerde(), s.output()));
            List<InternalRow> out = new ArrayList<>();
            for (InternalRow row : rows) {
                out.add(new GenericInternalRow(new Object[] {UTF8String.fromString(clustered(row.getString(0)))}));
            }
            return scan(s.output(), out);
        } else if (s.child() instanceof ResolvedPersistentView v && v.catalog() instanceof UshasCatalog
                && !stored(v.identifier()).equals(v.identifier())) {
            child = new ResolvedPersistentView(v.catalog(), stored(v.identifier()), v.info());
        } else {
            return none();
        }
        INNER.set(true);
        try {
            SparkPlan p = session.sessionState().planner().plan(new ShowCreateTable(child, s.asSerde(), s.output()))
                    .next();
            return scala.collection.immutable.List$.MODULE$.<SparkPlan>empty().$colon$colon(p);
        } finally {
            INNER.set(false);
        }
    }

    /** {@code PARTITIONED BY (p, sorted_bucket(a, 4, b))} as the session catalog writes a bucketed table:
     *  {@code PARTITIONED BY (p)}, {@code CLUSTERED BY (a)}, {@code SORTED BY (b)}, {@code INTO 4 BUCKETS}. */
    static String clustered(String ddl) {
        StringBuilder out = new StringBuilder();
        for (String line : ddl.split("\n", -1)) {
            if (!line.startsWith("PARTITIONED BY (") || !line.endsWith(")")
                    || !(line.contains("bucket(") || line.contains("sorted_bucket("))) {
                out.append(line).append('\n');
                continue;
            }
            List<String> identity = new ArrayList<>();
            String buckets = null;
            for (String item : split(line.substring("PARTITIONED BY (".length(), line.length() - 1))) {
                boolean sorted = item.startsWith("sorted_bucket(");
                if (!(sorted || item.startsWith("bucket(")) || !item.endsWith(")")) {
                    identity.add(item);
                    continue;
                }
                List<String> args = split(item.substring(item.indexOf('(') + 1, item.length() - 1));
                int n = 0;
                while (n < args.size() && !args.get(n).matches("\\d+")) n++;
                if (n == args.size()) return ddl;  // not a form this knows: Spark's text as it is
                List<String> columns = sorted ? args.subList(0, n) : args.subList(n + 1, args.size());
                List<String> sortedBy = sorted ? args.subList(n + 1, args.size()) : List.of();
                buckets = "CLUSTERED BY (" + String.join(", ", columns) + ")\n"
                        + (sortedBy.isEmpty() ? "" : "SORTED BY (" + String.join(", ", sortedBy) + ")\n")
                        + "INTO " + args.get(n) + " BUCKETS";
            }
            if (!identity.isEmpty()) out.append("PARTITIONED BY (").append(String.join(", ", identity)).append(")\n");
            if (buckets != null) out.append(buckets).append('\n');
        }
        return out.substring(0, out.length() - 1);
    }

    /** The items of a comma-separated list, commas inside parentheses or backquotes kept. */
    private static List<String> split(String list) {
        List<String> items = new ArrayList<>();
        int depth = 0;
        boolean quoted = false;
        int start = 0;
        for (int i = 0; i < list.length(); i++) {
            char c = list.charAt(i);
            if (c == '`') quoted = !quoted;
            else if (!quoted && c == '(') depth++;
            else if (!quoted && c == ')') depth--;
            else if (!quoted && depth == 0 && c == ',') {
                items.add(list.substring(start, i).trim());
                start = i + 1;
            }
        }
        items.add(list.substring(start).trim());
        return items;
    }

    /** The identifier as the catalog stores names: lower case. */
    private static Identifier stored(Identifier ident) {
        String[] namespace = new String[ident.namespace().length];
        for (int i = 0; i < namespace.length; i++) namespace[i] = ident.namespace()[i].toLowerCase(Locale.ROOT);
        return Identifier.of(namespace, ident.name().toLowerCase(Locale.ROOT));
    }

    private static boolean system(LogicalPlan namespace) {
        return namespace instanceof ResolvedNamespace n && n.namespace().size() == 1
                && UshasProcedures.NAMESPACE.equalsIgnoreCase(n.namespace().head());
    }

    private static boolean ushas(LogicalPlan namespace) {
        return namespace instanceof ResolvedNamespace n && n.catalog() instanceof UshasCatalog;
    }

    private static scala.collection.immutable.Seq<SparkPlan> none() {
        return scala.collection.immutable.List$.MODULE$.empty();
    }
}
