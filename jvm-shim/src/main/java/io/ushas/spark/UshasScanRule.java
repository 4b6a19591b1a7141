package io.ushas.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.PlanExpression;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.FileSourceScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import scala.Function1;
import scala.runtime.AbstractPartialFunction;
import scala.jdk.javaapi.CollectionConverters;

import java.util.ArrayList;
import java.util.List;

/**
 * Dynamic partition pruning through the catalog. Spark's file scan lists its files with the static
 * partition filters only and applies a join's dynamic filters to that listing; for a scan of a
 * catalog table with dynamic filters this rule gives the scan its own {@link UshasFileIndex} that
 * carries them, so the catalog is asked for just the partitions the join's values select. Run as a
 * columnar rule (set by {@link UshasExtensions}) because those run after Spark has planned the
 * dynamic filters' subqueries, in plain and adaptive execution alike. Plan adaptation only.
 */
final class UshasScanRule extends Rule<SparkPlan> {
    /** The columnar rule {@code spark.sql.extensions} installs. */
    static final class Columnar extends ColumnarRule {
        @Override
        public Rule<SparkPlan> preColumnarTransitions() {
            return new UshasScanRule();
        }
    }

    static Function1<SparkSession, ColumnarRule> factory() {
        return new scala.runtime.AbstractFunction1<>() {
            @Override
            public ColumnarRule apply(SparkSession session) {
                return new Columnar();
            }
        };
    }

    @Override
    public SparkPlan apply(SparkPlan plan) {
        return (SparkPlan) plan.transformUp(new AbstractPartialFunction<SparkPlan, SparkPlan>() {
            @Override
            public boolean isDefinedAt(SparkPlan p) {
                return p instanceof FileSourceScanExec s && s.relation().location() instanceof UshasFileIndex
                        && !dynamic(s).isEmpty();
            }

            @Override
            public <A1 extends SparkPlan, B1> B1 applyOrElse(A1 p, Function1<A1, B1> fallback) {
                if (!isDefinedAt(p)) return fallback.apply(p);
                @SuppressWarnings("unchecked")
                B1 out = (B1) withRuntimeIndex((FileSourceScanExec) p);
                return out;
            }
        });
    }

    private static List<Expression> dynamic(FileSourceScanExec s) {
        List<Expression> out = new ArrayList<>();
        for (Expression e : CollectionConverters.asJava(s.partitionFilters())) {
            if (e.find(x -> x instanceof PlanExpression).isDefined()) out.add(e);
        }
        return out;
    }

    private static FileSourceScanExec withRuntimeIndex(FileSourceScanExec s) {
        HadoopFsRelation r = s.relation();
        UshasFileIndex index = ((UshasFileIndex) r.location()).withRuntimeFilters(dynamic(s));
        HadoopFsRelation relation = r.copy(index, r.partitionSchema(), r.dataSchema(), r.bucketSpec(), r.fileFormat(),
                r.options(), r.sparkSession());
        return s.copy(relation, s.copy$default$2(), s.copy$default$3(), s.copy$default$4(), s.copy$default$5(),
                s.copy$default$6(), s.copy$default$7(), s.copy$default$8(), s.copy$default$9(), s.copy$default$10(),
                s.copy$default$11());
    }
}
