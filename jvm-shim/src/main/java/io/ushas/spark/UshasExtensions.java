package io.ushas.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier;
import org.apache.spark.sql.catalyst.analysis.ResolvedTable;
import org.apache.spark.sql.catalyst.plans.logical.AnalyzeColumn;
import org.apache.spark.sql.catalyst.plans.logical.AnalyzeTable;
import org.apache.spark.sql.catalyst.plans.logical.DropTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.RecoverPartitions;
import org.apache.spark.sql.catalyst.plans.logical.RepairTable;
import org.apache.spark.sql.catalyst.plans.logical.SetTableSerDeProperties;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * The session extension: {@code spark.sql.extensions=io.ushas.spark.UshasExtensions}. It installs
 * {@link UshasScanRule} (dynamic partition pruning asks the catalog for the join's partitions), {@link RowPolicies}
 * (row filters and column masks applied on every read of a table that has them), the optimizer
 * rule of {@link UshasStatistics} (the statistics {@code analyze_table} stored, on a table's relation) and plans
 * what Spark refuses for V2 tables but an Ushas table supports: {@code MSCK REPAIR TABLE t [ADD|DROP|SYNC
 * PARTITIONS]}, {@code ALTER TABLE t RECOVER PARTITIONS}, {@code ALTER TABLE t SET SERDEPROPERTIES (…)} and
 * {@code ANALYZE TABLE t [PARTITION (…)] COMPUTE STATISTICS [FOR COLUMNS …]} ({@code DataSourceV2Strategy}
 * throws {@code NOT_SUPPORTED_COMMAND_FOR_V2_TABLE} for these over a
 * {@code ResolvedTable}; extension strategies are asked first), and plans {@code DROP TABLE} of an Ushas
 * table as {@link DropTableExec} (one bridge round trip instead of Spark's two). Plans over other catalogs' tables are left
 * to Spark (session-catalog tables were already turned into Spark's own {@code RepairTableCommand}).
 */
public final class UshasExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectColumnar(UshasScanRule.factory());  // dynamic partition pruning through the catalog
        extensions.injectOptimizerRule(UshasStatistics.rule());  // analyze_table's statistics for the optimizer
        extensions.injectOptimizerRule(FooterCount.factory());  // count(*) of a few parquet files: no job
        extensions.injectOptimizerRule(MergeGroupFilter.factory());  // a MERGE's source size, for its group filter
        extensions.injectOptimizerRule(MergeBroadcastJoin.factory());  // a MERGE's small source broadcast
        extensions.injectQueryPostPlannerStrategyRule(LocalRowsWrite.factory());  // VALUES written: no shuffle
        extensions.injectResolutionRule(RowPolicies.factory());  // row filters and column masks on every read
        extensions.injectResolutionRule(MetadataOnlyDelete.factory());  // a partitions' DELETE decided at analysis
        extensions.injectPostHocResolutionRule(ViewSchemaSync.factory());  // views WITH SCHEMA [TYPE] EVOLUTION
        extensions.injectHintResolutionRule(FunctionStatements.factory());  // CREATE / DROP / DESCRIBE FUNCTION ...
        extensions.injectHintResolutionRule(MetadataOnlyDelete.BeforeResolution.factory());  // ... before its rewrite
        extensions.injectPlannerStrategy(new AbstractFunction1<SparkSession, SparkStrategy>() {
            @Override
            public SparkStrategy apply(SparkSession session) {
                return new Strategy();
            }
        });
        extensions.injectPlannerStrategy(new AbstractFunction1<SparkSession, SparkStrategy>() {
            @Override
            public SparkStrategy apply(SparkSession session) {
                return new DescribeStrategy(session);  // DESC EXTENDED / FORMATTED as the session catalog
            }
        });
        extensions.injectPlannerStrategy(new AbstractFunction1<SparkSession, SparkStrategy>() {
            @Override
            public SparkStrategy apply(SparkSession session) {
                return new ShowStrategy(session);  // SHOW TABLES / VIEWS with temporary views, SHOW CREATE names
            }
        });
        extensions.injectPlannerStrategy(new AbstractFunction1<SparkSession, SparkStrategy>() {
            @Override
            public SparkStrategy apply(SparkSession session) {
                return new CreateTableStrategy(session);  // TBLPROPERTIES told apart from OPTIONS' copies
            }
        });
        extensions.injectCheckRule(new AbstractFunction1<SparkSession, scala.Function1<LogicalPlan, BoxedUnit>>() {
            @Override
            public scala.Function1<LogicalPlan, BoxedUnit> apply(SparkSession session) {
                return new TempObjectCheck();  // a persistent view must not use temporary objects
            }
        });
        // files read or written by path: READ FILES or SELECT without a policy, WRITE FILES or OWN. The last
        // post-hoc resolution rule (it sees the plan after Hive's and data sources' conversions), not a check rule:
        // CheckAnalysis rewraps a check rule's AnalysisException without its SQLSTATE (42501)
        extensions.injectPostHocResolutionRule(PathReads.rule());
        return BoxedUnit.UNIT;
    }

    /** RepairTable / RecoverPartitions of an Ushas table -> {@link RepairTableExec}; AnalyzeTable /
     *  AnalyzeColumn -> {@link AnalyzeTableExec}; SET SERDEPROPERTIES (no SERDE class, no partition) ->
     *  {@link AlterTableExec} setting {@code OPTIONS}; DropTable -> {@link DropTableExec}; {@link MergeUnmatchedSource}
     *  -> {@link MergeUnmatchedSourceExec}; {@link MergeProbe} -> {@link MergeProbeExec}. */
    static final class Strategy extends SparkStrategy {
        @Override
        public scala.collection.immutable.Seq<SparkPlan> apply(LogicalPlan plan) {
            SparkPlan exec = null;
            if (plan instanceof MergeProbe m) {  // a MERGE's join and MergeRows in one pass (MergeBroadcastJoin)
                exec = new MergeProbeExec(planLater(m.left()), planLater(m.right()), m.condition(), m.matched(),
                        m.notMatched(), m.notMatchedBySource(), m.checkCardinality(), m.output(), m.operation(),
                        m.rowProjection());
            } else if (plan instanceof MergeUnmatchedSource m) {  // a MERGE's unmatched source rows (MergeBroadcastJoin)
                exec = new MergeUnmatchedSourceExec(planLater(m.left()), planLater(m.right()), m.condition(),
                        m.checkCardinality());
            } else if (plan instanceof DropTable d && d.child() instanceof ResolvedIdentifier id
                    && id.catalog() instanceof UshasCatalog c) {
                exec = new DropTableExec(c, id.identifier(), d.ifExists(), d.purge(), id);
            } else if (plan instanceof RepairTable r && ushas(r.child()) != null) {
                ResolvedTable t = ushas(r.child());
                String statement = "MSCK REPAIR TABLE";
                exec = new RepairTableExec((UshasCatalog) t.catalog(), t.identifier(), r.enableAddPartitions(),
                        r.enableDropPartitions(), statement);
            } else if (plan instanceof RecoverPartitions r && ushas(r.child()) != null) {
                ResolvedTable t = ushas(r.child());
                exec = new RepairTableExec((UshasCatalog) t.catalog(), t.identifier(), true, false,
                        "ALTER TABLE RECOVER PARTITIONS");
            } else if (plan instanceof AnalyzeTable a && ushas(a.child()) != null) {
                ResolvedTable t = ushas(a.child());
                java.util.Map<String, String> spec = null;
                if (!a.partitionSpec().isEmpty()) {
                    spec = new java.util.LinkedHashMap<>();
                    for (var e : scala.jdk.javaapi.CollectionConverters.asJava(a.partitionSpec()).entrySet()) {
                        spec.put(e.getKey(), e.getValue().isDefined() ? e.getValue().get() : null);
                    }
                }
                exec = new AnalyzeTableExec((UshasCatalog) t.catalog(), t.identifier(), spec,
                        spec == null ? java.util.List.of() : null);
            } else if (plan instanceof AnalyzeColumn a && ushas(a.child()) != null) {
                ResolvedTable t = ushas(a.child());
                exec = new AnalyzeTableExec((UshasCatalog) t.catalog(), t.identifier(), null, a.allColumns() ? null
                        : new java.util.ArrayList<>(scala.jdk.javaapi.CollectionConverters.asJava(a.columnNames().get())));
            } else if (plan instanceof SetTableSerDeProperties p && ushas(p.child()) != null
                    && p.serdeClassName().isEmpty() && p.partitionSpec().isEmpty() && p.serdeProperties().isDefined()) {
                ResolvedTable t = ushas(p.child());  // a data source table's serde properties are its OPTIONS
                // each option with a plain copy too, as Spark passed them at CREATE, unless the table was made
                // without those copies (CreateTableStrategy): then its options have none
                java.util.Map<String, String> props = t.table().properties();
                boolean copied = props.keySet().stream().filter(k -> k.startsWith(TableCatalog.OPTION_PREFIX))
                        .allMatch(k -> props.containsKey(k.substring(TableCatalog.OPTION_PREFIX.length())));
                java.util.List<TableChange> changes = new java.util.ArrayList<>();
                for (var e : scala.jdk.javaapi.CollectionConverters.asJava(p.serdeProperties().get()).entrySet()) {
                    changes.add(TableChange.setProperty(TableCatalog.OPTION_PREFIX + e.getKey(), e.getValue()));
                    if (copied) changes.add(TableChange.setProperty(e.getKey(), e.getValue()));
                }
                exec = new AlterTableExec((UshasCatalog) t.catalog(), t.identifier(), changes.toArray(new TableChange[0]),
                        "SET SERDEPROPERTIES");
            }
            if (exec == null) return scala.collection.immutable.List$.MODULE$.empty();
            return scala.collection.immutable.List$.MODULE$.empty().$colon$colon(exec);
        }

        private static ResolvedTable ushas(LogicalPlan child) {
            return child instanceof ResolvedTable t && t.catalog() instanceof UshasCatalog ? t : null;
        }
    }
}
