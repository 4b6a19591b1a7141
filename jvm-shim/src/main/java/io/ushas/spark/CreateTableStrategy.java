package io.ushas.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier;
import org.apache.spark.sql.catalyst.plans.logical.CreateTable;
import org.apache.spark.sql.catalyst.plans.logical.CreateTableAsSelect;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceTable;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceTableAsSelect;
import org.apache.spark.sql.catalyst.plans.logical.TableSpec;
import org.apache.spark.sql.catalyst.plans.logical.TableSpecBase;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * CREATE / REPLACE TABLE [AS SELECT] of an Ushas table: tells the catalog which keys the statement gave in
 * TBLPROPERTIES that it also gave, with the same value, in OPTIONS. Spark hands a V2 catalog every option
 * twice ({@code option.k} and a plain {@code k}, over a table property of the same name), so without this the
 * catalog cannot tell a table property from an option's plain copy; with it, it keeps the table properties
 * the statement gave and drops the copies, as the session catalog lists them (Table Properties and Storage
 * Properties). The marker property ({@link #MARKER}, a JSON list) is consumed by the catalog's create and
 * never stored. Installed by {@link UshasExtensions}.
 */
final class CreateTableStrategy extends SparkStrategy {
    /** the property the marker travels in (the catalog's {@code spark.tables.TBLPROPERTIES_MARKER}) */
    static final String MARKER = "__ushas_tblproperties_also_options";
    private static final ThreadLocal<Boolean> INNER = ThreadLocal.withInitial(() -> false);
    private final SparkSession session;

    CreateTableStrategy(SparkSession session) {
        this.session = session;
    }

    @Override
    public scala.collection.immutable.Seq<SparkPlan> apply(LogicalPlan plan) {
        if (INNER.get()) return none();
        LogicalPlan marked = null;
        if (plan instanceof CreateTable c && ushas(c.name()) && marked(c.tableSpec()) != null) {
            marked = c.copy(c.name(), c.columns(), c.partitioning(), marked(c.tableSpec()), c.ignoreIfExists());
        } else if (plan instanceof CreateTableAsSelect c && ushas(c.name()) && marked(c.tableSpec()) != null) {
            marked = c.copy(c.name(), c.partitioning(), c.query(), marked(c.tableSpec()), c.writeOptions(),
                    c.ignoreIfExists(), c.isAnalyzed());
        } else if (plan instanceof ReplaceTable c && ushas(c.name()) && marked(c.tableSpec()) != null) {
            marked = c.copy(c.name(), c.columns(), c.partitioning(), marked(c.tableSpec()), c.orCreate());
        } else if (plan instanceof ReplaceTableAsSelect c && ushas(c.name()) && marked(c.tableSpec()) != null) {
            marked = c.copy(c.name(), c.partitioning(), c.query(), marked(c.tableSpec()), c.writeOptions(),
                    c.orCreate(), c.isAnalyzed());
        }
        if (marked == null) return none();
        INNER.set(true);
        try {
            SparkPlan p = session.sessionState().planner().plan(marked).next();
            return scala.collection.immutable.List$.MODULE$.<SparkPlan>empty().$colon$colon(p);
        } finally {
            INNER.set(false);
        }
    }

    /** The spec with the marker among its properties, or null when no key is both a property and an option. */
    private static TableSpec marked(TableSpecBase base) {
        if (!(base instanceof TableSpec spec) || spec.options().isEmpty() || spec.properties().isEmpty()) return null;
        Map<String, String> options = scala.jdk.javaapi.CollectionConverters.asJava(spec.options());
        List<String> both = new ArrayList<>();
        for (Map.Entry<String, String> e : scala.jdk.javaapi.CollectionConverters.asJava(spec.properties()).entrySet()) {
            if (e.getValue() != null && e.getValue().equals(options.get(e.getKey()))) both.add(e.getKey());
        }
        if (both.isEmpty()) return null;
        scala.collection.immutable.Map<String, String> properties = spec.properties().updated(MARKER, Json.strings(
                both.toArray(new String[0])).toString());
        return new TableSpec(properties, spec.provider(), spec.options(), spec.location(), spec.comment(),
                spec.collation(), spec.serde(), spec.external(), spec.constraints());
    }

    private static boolean ushas(LogicalPlan name) {
        return name instanceof ResolvedIdentifier r && r.catalog() instanceof UshasCatalog;
    }

    private static scala.collection.immutable.Seq<SparkPlan> none() {
        return scala.collection.immutable.List$.MODULE$.empty();
    }
}
