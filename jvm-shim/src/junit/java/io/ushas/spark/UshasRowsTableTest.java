package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.FieldReference;
import org.apache.spark.sql.connector.expressions.LiteralValue;
import org.apache.spark.sql.connector.expressions.filter.And;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** The metadata / system tables' shim: V2 predicates as filter JSON, Python's JSON rows as InternalRows. */
class UshasRowsTableTest {
    private static Expression col(String name) {
        return FieldReference.apply(name);
    }

    private static Expression lit(Object v, DataType t) {
        return new LiteralValue<>(v, t);
    }

    private static String json(Predicate p) {
        return UshasRowsTable.filter(p).toString();
    }

    @Test
    void predicatesBecomeFilterJson() {
        assertEquals("{\"op\":\"ge\",\"column\":\"dt\",\"value\":\"2024-05\"}",
                json(new Predicate(">=", new Expression[] {col("dt"), lit(UTF8String.fromString("2024-05"), DataTypes.StringType)})));
        // a literal on the left: flipped, not lost
        assertEquals("{\"op\":\"lt\",\"column\":\"version\",\"value\":3}",
                json(new Predicate(">", new Expression[] {lit(3L, DataTypes.LongType), col("version")})));
        assertEquals("{\"op\":\"ge\",\"column\":\"time\",\"value\":{\"micros\":42}}",
                json(new Predicate(">=", new Expression[] {col("time"), lit(42L, DataTypes.TimestampType)})));
        assertEquals("{\"op\":\"and\",\"children\":[{\"op\":\"is_null\",\"column\":\"a\"},"
                + "{\"op\":\"in\",\"column\":\"b\",\"values\":[1,2]}]}",
                json(new And(new Predicate("IS_NULL", new Expression[] {col("a")}),
                        new Predicate("IN", new Expression[] {col("b"), lit(1, DataTypes.IntegerType),
                                lit(2, DataTypes.IntegerType)}))));
        assertEquals("{\"op\":\"unknown\"}",
                json(new Predicate("<>", new Expression[] {col("a"), lit(1, DataTypes.IntegerType)})));
    }

    @Test
    void rowsOfEveryColumnKind() {
        StructType schema = StructType.fromDDL("s STRING, n BIGINT, b BOOLEAN, t TIMESTAMP, d DATE, "
                + "tags ARRAY<STRING>, props MAP<STRING, STRING>, cols ARRAY<STRUCT<name: STRING, nullable: BOOLEAN>>");
        JsonNode json = Json.parse("[\"x\", 7, true, 1000000, 3, [\"pii\"], {\"k\": \"v\"}, [[\"id\", false]]]");
        InternalRow row = UshasRowsTable.row(json, schema);
        assertEquals("x", row.getUTF8String(0).toString());
        assertEquals(7L, row.getLong(1));
        assertEquals(true, row.getBoolean(2));
        assertEquals(1000000L, row.getLong(3));
        assertEquals(3, row.getInt(4));
        assertEquals("pii", row.getArray(5).getUTF8String(0).toString());
        assertEquals("v", row.getMap(6).valueArray().getUTF8String(0).toString());
        assertEquals("id", row.getArray(7).getStruct(0, 2).getUTF8String(0).toString());
        assertEquals(true, UshasRowsTable.row(Json.parse("[null, null, null, null, null, null, null, null]"), schema)
                .isNullAt(6));
    }
}
