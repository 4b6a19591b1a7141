package io.ushas.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Exists;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceData;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.internal.SQLConf;
import scala.Function1;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

import java.math.BigInteger;
import java.util.Locale;

/**
 * Whether a row-level statement runs Spark's runtime group filter ({@code RowLevelOperationRuntimeGroupFiltering}:
 * a job that runs the condition first to find the files holding a matching row; docs/row-level.md). For a
 * MERGE it is pure extra when every file of the group holds a matched key, which is what a MERGE whose source
 * has many rows per file of the group does (the usual upsert of a late batch). This optimizer rule (it runs
 * before Spark's group filter rule) hands a MERGE's {@link UshasRowLevel.Operation} the estimated row count
 * of its source; the statement's scan then declines the filter ({@code filterAttributes} empty) by the table
 * property {@value #PROPERTY}: {@code auto} (the default: a MERGE whose source has at least {@value #ROWS_PER_FILE}
 * rows per file of the group, and whose group is at most one wave of full splits,
 * {@code spark.sql.files.maxPartitionBytes} × the default parallelism, so that rewriting every file of it
 * costs at most one wave of tasks), {@code always}, {@code never}. The plan is not changed here.
 */
final class MergeGroupFilter extends Rule<LogicalPlan> {
    /** the table property */
    static final String PROPERTY = "ushas.row-level.group-filter";
    /** source rows per file of the group from which a MERGE is expected to hit every file */
    static final int ROWS_PER_FILE = 4;

    static Function1<SparkSession, Rule<LogicalPlan>> factory() {
        return new AbstractFunction1<>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new MergeGroupFilter();
            }
        };
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        plan.foreach(new AbstractFunction1<LogicalPlan, BoxedUnit>() {
            @Override
            public BoxedUnit apply(LogicalPlan p) {
                if (p instanceof ReplaceData rd && rd.groupFilterCondition().isDefined()
                        && rd.groupFilterCondition().get() instanceof Exists e) {
                    UshasRowLevel.Operation op = UshasRowLevel.operationOf(rd);
                    if (op != null) op.sourceRows(estimatedRows(e.plan()));
                }
                return BoxedUnit.UNIT;
            }
        });
        return plan;
    }

    /** The rows of the MERGE's source (the group filter's subquery is {@code Filter(ON condition, source)}):
     *  its row count when Spark knows it (a cached or analyzed source), else its size over its row's size; -1
     *  when Spark does not know its size either (an RDD's rows: {@code spark.sql.defaultSizeInBytes}). */
    static long estimatedRows(LogicalPlan plan) {
        LogicalPlan source = plan instanceof Filter f ? f.child() : plan;
        Statistics st = source.stats();
        if (st.rowCount().isDefined()) return st.rowCount().get().bigInteger().min(BigInteger.valueOf(Long.MAX_VALUE)).longValue();
        if (st.sizeInBytes().bigInteger().compareTo(BigInteger.valueOf(SQLConf.get().defaultSizeInBytes())) >= 0) return -1;
        long row = 8;  // as Spark's EstimationUtils.getSizePerRow
        for (Attribute a : CollectionConverters.asJava(source.output())) row += a.dataType().defaultSize();
        return st.sizeInBytes().bigInteger().divide(BigInteger.valueOf(row)).min(BigInteger.valueOf(Long.MAX_VALUE))
                .longValue();
    }

    /** Whether the statement's scan declines the group filter: {@code mode} the property's value (null: auto),
     *  {@code merge} whether the statement is a MERGE, {@code sourceRows} its source's estimate (-1: unknown),
     *  {@code files} / {@code bytes} the group's (the files of the partitions it reads), {@code waveBytes}
     *  {@code maxPartitionBytes} × the default parallelism. */
    static boolean declines(String table, String mode, boolean merge, long sourceRows, long files, long bytes,
                            long waveBytes) {
        String m = mode == null ? "auto" : mode.trim().toLowerCase(Locale.ROOT);
        switch (m) {
            case "always":
                return false;
            case "never":
                return true;
            case "auto":
                return merge && sourceRows >= 0 && files > 0 && sourceRows >= ROWS_PER_FILE * files
                        && bytes <= waveBytes;
            default:
                throw Errors.invalidArgument("table " + table + ": the table property " + PROPERTY + " is '" + mode
                        + "'; it takes auto, always or never");
        }
    }
}
