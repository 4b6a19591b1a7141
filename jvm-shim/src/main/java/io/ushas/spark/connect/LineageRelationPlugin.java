package io.ushas.spark.connect;

import java.util.List;
import java.util.Optional;

import org.apache.spark.connect.proto.Relation;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.RelationPlugin;
import org.apache.spark.sql.execution.CommandExecutionMode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.sparkproject.connect.protobuf.Any;
import org.sparkproject.connect.protobuf.InvalidProtocolBufferException;
import org.sparkproject.connect.protobuf.StringValue;

import io.ushas.spark.PlanWriter;

/**
 * {@code df.lineage()} for Spark Connect clients
 * ({@code spark.connect.extensions.relation.classes=io.ushas.spark.connect.LineageRelationPlugin}).
 *
 * <p>A Connect client has no JVM: it sends a relation whose {@code extension} is a protobuf {@code Any}
 * with one of two type URLs, and reads back one row with one string column {@code plan_json}: the plan JSON
 * (docs/internals/plan-json.md) of the analyzed plan, which the client resolves into the same {@code LineageResult} as
 * a classic session does ({@code lineage.connect}). Nothing is executed.
 * <ul>
 * <li>{@value #OF_RELATION}: the {@code Any}'s value is a serialized {@code spark.connect.Relation} (the
 * client DataFrame's plan), analyzed in the client's own server-side session;</li>
 * <li>{@value #OF_SQL}: the value is a {@code google.protobuf.StringValue} holding SQL text, analyzed
 * without executing it (commands included: INSERT, CTAS, MERGE are analyzed, not run).</li>
 * </ul>
 * Any other type URL is not this plugin's ({@code Optional.empty()}: Spark asks the next plugin).
 * Adaptation only: the plan walk is {@link PlanWriter}'s, the resolution Python's.
 */
public final class LineageRelationPlugin implements RelationPlugin {
    public static final String OF_RELATION = "type.googleapis.com/io.ushas.lineage.LineageOfRelation";
    public static final String OF_SQL = "type.googleapis.com/io.ushas.lineage.LineageOfSql";
    public static final String COLUMN = "plan_json";

    @Override
    public Optional<LogicalPlan> transform(byte[] relation, SparkConnectPlanner planner) {
        Any any;
        try {
            any = Any.parseFrom(relation);
        } catch (InvalidProtocolBufferException e) {
            return Optional.empty();
        }
        String url = any.getTypeUrl();
        if (!OF_RELATION.equals(url) && !OF_SQL.equals(url)) return Optional.empty();
        SparkSession session = planner.session();
        LogicalPlan analyzed;
        try {
            if (OF_SQL.equals(url)) {
                analyzed = PlanWriter.analyzeSql(session, StringValue.parseFrom(any.getValue()).getValue());
            } else {
                LogicalPlan plan = planner.transformRelation(Relation.parseFrom(any.getValue()));
                analyzed = session.sessionState().executePlan(plan, CommandExecutionMode.SKIP()).analyzed();
            }
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalArgumentException("ushas lineage: malformed " + url + " payload: " + e.getMessage(), e);
        } catch (org.apache.spark.sql.catalyst.parser.ParseException e) {
            throw LineageRelationPlugin.<RuntimeException>rethrow(e);  // Spark's own error reaches the client
        }
        String json = PlanWriter.toJson(analyzed);
        StructType schema = new StructType().add(COLUMN, DataTypes.StringType, false);
        List<Row> rows = List.of(RowFactory.create(json));
        return Optional.of(session.createDataFrame(rows, schema).logicalPlan());
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> T rethrow(Throwable t) throws T {
        throw (T) t;
    }
}
