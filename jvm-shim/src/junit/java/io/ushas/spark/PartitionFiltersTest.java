package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Rand;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.junit.jupiter.api.Test;

/** Spark's partition filters as the JSON ushas_catalog.pruning reads (its format is documented there). */
class PartitionFiltersTest {
    private static AttributeReference col(String name, DataType type) {
        return new AttributeReference(name, type, true, Metadata.empty(), NamedExpression.newExprId(),
                scala.collection.immutable.Seq$.MODULE$.<String>empty());
    }

    private static String json(Expression e) {
        return PartitionFilters.json(e).toString();
    }

    @Test
    void comparisonsAndJunctions() {
        AttributeReference dt = col("dt", DataTypes.StringType);
        AttributeReference h = col("h", DataTypes.IntegerType);
        assertEquals("{\"op\":\"eq\",\"column\":\"dt\",\"value\":\"a\"}",
                json(new EqualTo(dt, Literal.create("a", DataTypes.StringType))));
        // a literal on the left: the comparison is flipped, not lost
        assertEquals("{\"op\":\"lt\",\"column\":\"h\",\"value\":3}",
                json(new GreaterThan(Literal.create(3, DataTypes.IntegerType), h)));
        assertEquals("{\"op\":\"and\",\"children\":[{\"op\":\"is_null\",\"column\":\"dt\"},"
                + "{\"op\":\"gt\",\"column\":\"h\",\"value\":1}]}",
                json(new And(new IsNull(dt), new GreaterThan(h, Literal.create(1, DataTypes.IntegerType)))));
    }

    @Test
    void whatHasNoJsonFormPrunesNothing() {
        assertEquals("{\"op\":\"unknown\"}", json(new GreaterThan(new Rand(Literal.create(1L, DataTypes.LongType)),
                Literal.create(0.5, DataTypes.DoubleType))));
        assertNull(PartitionFilters.toJson(List.of(), List.of()));
    }
}
