package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.ResolvedPartitionSpec;
import org.apache.spark.sql.catalyst.analysis.ResolvedPersistentView;
import org.apache.spark.sql.catalyst.analysis.ResolvedTable;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.plans.logical.DescribeColumn;
import org.apache.spark.sql.catalyst.plans.logical.DescribeRelation;
import org.apache.spark.sql.catalyst.plans.logical.DescribeTablePartition;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.LocalTableScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.execution.command.DescribeRelationJsonCommand;
import org.apache.spark.unsafe.types.UTF8String;

import java.util.ArrayList;
import java.util.List;

/**
 * DESCRIBE of an Ushas table as Spark's session catalog shows its tables: Spark's own V2 rows for the
 * columns and partitioning, then the detailed section ({@code DESC EXTENDED / FORMATTED}) with what the
 * session catalog prints — Owner, Created Time, Last Access, Created By, Type, Provider, Table Properties,
 * Location, Storage Properties, Partition Provider; a partition's Partition Parameters and Partition
 * Statistics; {@code DESC FORMATTED t col} with the column statistics rows. Python builds the rows
 * ({@code describe_table}, {@code describe_column} in {@code ushas_catalog.spark.describe}); this class only
 * asks Spark's own planning for the base rows and joins them. Installed by {@link UshasExtensions}.
 */
final class DescribeStrategy extends SparkStrategy {
    /** set while Spark's own strategies plan the base rows of a statement this strategy answers */
    private static final ThreadLocal<Boolean> INNER = ThreadLocal.withInitial(() -> false);
    private final SparkSession session;

    DescribeStrategy(SparkSession session) {
        this.session = session;
    }

    @Override
    public scala.collection.immutable.Seq<SparkPlan> apply(LogicalPlan plan) {
        if (INNER.get()) return none();
        ResolvedTable t;
        ObjectNode r;
        scala.collection.immutable.Seq<Attribute> output;
        if (plan instanceof DescribeRelation d && (t = ushas(d.relation())) != null) {
            r = request(t, "table");
            r.put("extended", d.isExtended());
            output = d.output();
        } else if (plan instanceof DescribeRelation d && d.isExtended()
                && d.relation() instanceof ResolvedPersistentView v && v.catalog() instanceof UshasCatalog c) {
            r = c.request(v.identifier());
            r.put("what", "view");
            r.put("spark_version", session.version());
            r.put("schema_mode", v.info().schemaMode());
            r.put("schema_binding", session.conf().get("spark.sql.legacy.viewSchemaBindingMode", "true"));
            return rows(d.output(), base(plan), c.call("describe", r, null, null), plan);
        } else if (plan instanceof DescribeTablePartition d && (t = ushas(d.table())) != null
                && d.partitionSpec() instanceof ResolvedPartitionSpec spec && t.table() instanceof UshasTable u) {
            r = request(t, "table");
            r.put("extended", d.isExtended());
            r.set("partition", Rows.toJson(spec.ident(), u.partitionSchema()));
            output = d.output();
        } else if (plan instanceof DescribeColumn d && d.isExtended() && (t = ushas(d.relation())) != null) {
            r = request(t, "column");
            output = d.output();
        } else if (plan instanceof DescribeRelationJsonCommand d && (t = ushas(d.child())) != null
                && t.table() instanceof UshasTable u) {
            // DESCRIBE … AS JSON: Spark's command refuses V2 tables when it runs; the document comes from Python
            r = request(t, "json");
            if (!d.partitionSpec().isEmpty()) r.set("partition", Json.map(
                    scala.jdk.javaapi.CollectionConverters.asJava(d.partitionSpec())));
            return rows(d.output(), new InternalRow[0], ((UshasCatalog) t.catalog()).call("describe", r, null, null),
                    plan);
        } else {
            return none();
        }
        InternalRow[] base = base(plan);
        if (plan instanceof DescribeColumn && base.length > 0) {
            r.put("column", base[0].getUTF8String(1).toString());
        }
        return rows(output, base, ((UshasCatalog) t.catalog()).call("describe", r, null, null), plan);
    }

    /** Spark's base rows up to its detailed section, then the answer's rows. */
    private static scala.collection.immutable.Seq<SparkPlan> rows(scala.collection.immutable.Seq<Attribute> output,
                                                                 InternalRow[] base, JsonNode answer, LogicalPlan plan) {
        List<InternalRow> rows = new ArrayList<>();
        for (InternalRow row : base) {
            if (plan instanceof DescribeColumn && !java.util.Set.of("col_name", "data_type", "comment")
                    .contains(row.getUTF8String(0).toString())) {
                continue;  // the statistics rows come from Python, whatever Spark found
            }
            if (plan instanceof DescribeRelation || plan instanceof DescribeTablePartition) {
                // a table's partitioning and details come from Python (a view's details)
                String first = row.isNullAt(0) ? "" : row.getUTF8String(0).toString();
                boolean table = !(plan instanceof DescribeRelation d && d.relation() instanceof ResolvedPersistentView);
                if (first.startsWith("# Detailed ") || (table && first.startsWith("# Partition"))) {
                    InternalRow last = rows.isEmpty() ? null : rows.get(rows.size() - 1);
                    if (last != null && !last.isNullAt(0) && last.getUTF8String(0).toString().isEmpty()) {
                        rows.remove(rows.size() - 1);  // the empty row before the section
                    }
                    break;
                }
            }
            rows.add(row.copy());
        }
        for (JsonNode values : answer.get("rows")) {
            Object[] cells = new Object[values.size()];
            for (int i = 0; i < cells.length; i++) {
                JsonNode v = values.get(i);
                cells[i] = v == null || v.isNull() ? null : UTF8String.fromString(v.asText());
            }
            rows.add(new GenericInternalRow(cells));
        }
        SparkPlan exec = new LocalTableScanExec(output,
                scala.jdk.javaapi.CollectionConverters.asScala(rows).toList(), scala.Option.empty(), false);
        return scala.collection.immutable.List$.MODULE$.<SparkPlan>empty().$colon$colon(exec);
    }

    private ObjectNode request(ResolvedTable t, String what) {
        ObjectNode r = ((UshasCatalog) t.catalog()).request(t.identifier());
        r.put("what", what);
        r.put("spark_version", session.version());
        return r;
    }

    /** The rows Spark's own planning gives the statement (its V2 description). */
    private InternalRow[] base(LogicalPlan plan) {
        INNER.set(true);
        try {
            SparkPlan p = session.sessionState().planner().plan(plan).next();
            return (InternalRow[]) p.executeCollect();
        } finally {
            INNER.set(false);
        }
    }

    private static ResolvedTable ushas(LogicalPlan child) {
        return child instanceof ResolvedTable t && t.catalog() instanceof UshasCatalog ? t : null;
    }

    private static scala.collection.immutable.Seq<SparkPlan> none() {
        return scala.collection.immutable.List$.MODULE$.empty();
    }
}
