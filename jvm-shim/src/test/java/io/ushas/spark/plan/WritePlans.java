package io.ushas.spark.plan;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * Analyzed V2 write plans built WITHOUT executing them, for lineage tests and tools: exactly the
 * logical plans {@code DataFrameWriterV2.overwrite(condition)} and {@code .overwritePartitions()}
 * build ({@code OverwriteByExpression.byName} / {@code OverwritePartitionsDynamic.byName} over the
 * table's {@code DataSourceV2Relation}), run through the session's analyzer rules but not through
 * the post-analysis checks, so the plan is available even where the table refuses that write
 * at execution (capability checks such as "does not support dynamic overwrite").
 */
public final class WritePlans {
    private WritePlans() {}

    /** {@code DataFrameWriterV2.overwrite(condition)}: condition in SQL over the table's columns. */
    public static LogicalPlan overwriteByExpression(SparkSession spark, String table, Dataset<?> query,
                                                    String condition) throws Exception {
        Expression cond = spark.sessionState().sqlParser().parseExpression(condition);
        return analyze(spark, OverwriteByExpression.byName(relation(spark, table), query.queryExecution().analyzed(),
                cond, scala.collection.immutable.Map$.MODULE$.<String, String>empty(), false));
    }

    /** {@code DataFrameWriterV2.overwritePartitions()}. */
    public static LogicalPlan overwritePartitionsDynamic(SparkSession spark, String table, Dataset<?> query)
            throws Exception {
        return analyze(spark, OverwritePartitionsDynamic.byName(relation(spark, table),
                query.queryExecution().analyzed(), scala.collection.immutable.Map$.MODULE$.<String, String>empty(),
                false));
    }

    private static LogicalPlan analyze(SparkSession spark, LogicalPlan plan) {
        return spark.sessionState().analyzer().execute(plan);
    }

    /** The V2 relation of {@code catalog.namespace.table} as the catalog's loadTable returns it. */
    private static DataSourceV2Relation relation(SparkSession spark, String table) throws ParseException,
            org.apache.spark.sql.catalyst.analysis.NoSuchTableException {
        scala.collection.Seq<String> parts = spark.sessionState().sqlParser().parseMultipartIdentifier(table);
        int n = parts.size();
        CatalogPlugin catalog = spark.sessionState().catalogManager().catalog(parts.apply(0));
        String[] namespace = new String[n - 2];
        for (int i = 1; i < n - 1; i++) {
            namespace[i - 1] = parts.apply(i);
        }
        Identifier ident = Identifier.of(namespace, parts.apply(n - 1));
        Table t = ((TableCatalog) catalog).loadTable(ident);
        return DataSourceV2Relation.create(t, scala.Option.apply(catalog), scala.Option.apply(ident));
    }
}
