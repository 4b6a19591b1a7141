package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** Procedure arguments (Spark's internal values) to JSON and result values back, for every declared type. */
class UshasProceduresTest {
    private static Object roundTrip(Object internal, String ddl) {
        DataType t = DataType.fromDDL(ddl);
        JsonNode json = UshasProcedures.toJson(internal, t);
        return UshasProcedures.fromJson(Json.parse(json.toString()), t);
    }

    @Test
    void atomicValuesRoundTrip() {
        assertEquals(UTF8String.fromString("db.t"), roundTrip(UTF8String.fromString("db.t"), "STRING"));
        assertEquals(7, roundTrip(7, "INT"));
        assertEquals(1_700_000_000_000_000L, roundTrip(1_700_000_000_000_000L, "TIMESTAMP"));  // micros
        assertEquals(12L, roundTrip(12L, "BIGINT"));
        assertEquals(true, roundTrip(true, "BOOLEAN"));
        assertEquals(0.5, roundTrip(0.5, "DOUBLE"));
        assertNull(UshasProcedures.fromJson(Json.parse("null"), DataType.fromDDL("STRING")));
    }

    @Test
    void arraysAndMapsRoundTrip() {
        ArrayData a = (ArrayData) roundTrip(new GenericArrayData(new Object[] {UTF8String.fromString("a"), null}),
                "ARRAY<STRING>");
        assertEquals(2, a.numElements());
        assertEquals("a", a.getUTF8String(0).toString());
        assertEquals(true, a.isNullAt(1));
        MapData m = (MapData) roundTrip(new ArrayBasedMapData(
                new GenericArrayData(new Object[] {UTF8String.fromString("dt")}),
                new GenericArrayData(new Object[] {UTF8String.fromString("2024-05-01")})), "MAP<STRING, STRING>");
        assertEquals("dt", m.keyArray().getUTF8String(0).toString());
        assertEquals("2024-05-01", m.valueArray().getUTF8String(0).toString());
    }
}
