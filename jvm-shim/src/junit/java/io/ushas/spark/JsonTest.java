package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void mapsRoundTripWithNulls() {
        Map<String, String> in = new LinkedHashMap<>();
        in.put("a", "1");
        in.put("b", null);
        Map<String, String> out = Json.toMap(Json.parse(Json.map(in).toString()));
        assertEquals(in, out);
        assertEquals(Map.of(), Json.toMap(null));
    }

    @Test
    void stringsAndText() {
        assertArrayEquals(new String[] {"x", "y"}, Json.toStrings(Json.strings(new String[] {"x", "y"})));
        JsonNode n = Json.parse("{\"k\": null, \"v\": \"t\"}");
        assertNull(Json.text(n, "k"));
        assertNull(Json.text(n, "missing"));
        assertEquals("t", Json.text(n, "v"));
    }

    @Test
    void invalidJsonIsAClearError() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Json.parse("{nope"));
        assertEquals(true, e.getMessage().startsWith("Ushas bridge answered invalid JSON"));
    }
}
