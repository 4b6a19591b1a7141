package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.catalog.BucketSpec;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.LiteralValue;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.SortedBucketTransform;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.DataTypes;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A table's bucketing ({@code CLUSTERED BY (c) [SORTED BY (s)] INTO n BUCKETS}) in Spark's shapes: the
 * {@code bucket} / {@code sorted_bucket} transform after the partition transforms (what DESCRIBE and SHOW
 * CREATE TABLE show), the read description's {@code BucketSpec} ({@link UshasSource}: bucket pruning and
 * bucketed joins on the V1 file path), and the write's hash distribution and bucket file names
 * ({@link UshasWrite}, {@link UshasBatchWrite}). Python's answer carries it as {@code bucketing}
 * ({@code num_buckets}, {@code columns}, {@code sort_columns}); null when the table is not bucketed.
 */
final class Bucketing {
    /** the read description's option carrying the bucket spec (JSON) */
    static final String OPTION = "ushas.bucketing";

    final int numBuckets;
    final String[] columns;
    final String[] sortColumns;

    private Bucketing(int numBuckets, String[] columns, String[] sortColumns) {
        this.numBuckets = numBuckets;
        this.columns = columns;
        this.sortColumns = sortColumns;
    }

    /** The bucketing of a table answer, or null. */
    static Bucketing of(JsonNode table) {
        JsonNode b = table == null ? null : table.get("bucketing");
        if (b == null || b.isNull()) return null;
        return new Bucketing(b.get("num_buckets").asInt(), Json.toStrings(b.get("columns")),
                Json.toStrings(b.get("sort_columns")));
    }

    /** Identity transforms of the partition columns, then the bucket transform when bucketed. */
    static Transform[] transforms(String[] partitionBy, JsonNode table) {
        List<Transform> out = new ArrayList<>();
        for (String p : partitionBy) out.add(Expressions.identity(p));
        Bucketing b = of(table);
        if (b != null) out.add(b.transform());
        return out.toArray(new Transform[0]);
    }

    Transform transform() {
        if (sortColumns.length == 0) return Expressions.bucket(numBuckets, columns);
        return new SortedBucketTransform(new LiteralValue<>(numBuckets, DataTypes.IntegerType), refs(columns),
                refs(sortColumns));
    }

    private static scala.collection.immutable.Seq<NamedReference> refs(String[] names) {
        List<NamedReference> out = new ArrayList<>();
        for (String n : names) out.add(Expressions.column(n));
        return CollectionConverters.asScala(out).toList();
    }

    /** The read description's option value (JSON), or null. */
    static String option(JsonNode table) {
        JsonNode b = table == null ? null : table.get("bucketing");
        return b == null || b.isNull() ? null : b.toString();
    }

    /** The V1 relation's bucket spec from the read option. */
    static Option<BucketSpec> bucketSpec(Option<String> option) {
        if (option.isEmpty()) return Option.empty();
        JsonNode b = Json.parse(option.get());
        return Option.apply(new BucketSpec(b.get("num_buckets").asInt(),
                CollectionConverters.asScala(Arrays.asList(Json.toStrings(b.get("columns")))).toList(),
                CollectionConverters.asScala(Arrays.asList(Json.toStrings(b.get("sort_columns")))).toList()));
    }
}
