package io.ushas.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.CoalesceExec;
import org.apache.spark.sql.execution.LocalTableScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.exchange.REBALANCE_PARTITIONS_BY_COL$;
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec;
import scala.Function1;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;

/**
 * A write of rows the driver holds ({@code INSERT … VALUES}, a DataFrame of local rows) into a partitioned
 * table that clusters its rows by partition ({@link UshasWrite#requiredDistribution}): Spark plans the
 * clustering as a shuffle ({@code REBALANCE_PARTITIONS_BY_COL}) even over local rows, a stage of its own for
 * every 1-row INSERT. The local rows go to one task instead (a coalesce: no shuffle), which writes every
 * partition's rows, so each partition still gets one file. Only an exchange of that origin directly over a
 * local table scan; plan adaptation only.
 */
final class LocalRowsWrite extends Rule<SparkPlan> {
    static Function1<SparkSession, Rule<SparkPlan>> factory() {
        return new AbstractFunction1<SparkSession, Rule<SparkPlan>>() {
            @Override
            public Rule<SparkPlan> apply(SparkSession session) {
                return new LocalRowsWrite();
            }
        };
    }

    @Override
    public SparkPlan apply(SparkPlan plan) {
        return plan.transformUp(new AbstractPartialFunction<SparkPlan, SparkPlan>() {
            @Override
            public boolean isDefinedAt(SparkPlan p) {
                return p instanceof ShuffleExchangeExec e && e.shuffleOrigin() == REBALANCE_PARTITIONS_BY_COL$.MODULE$
                        && e.child() instanceof LocalTableScanExec;
            }

            @Override
            public SparkPlan apply(SparkPlan p) {
                return new CoalesceExec(1, ((ShuffleExchangeExec) p).child());
            }
        });
    }
}
