package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/** Jackson helpers: the shim speaks JSON with Python and nothing else. */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {}

    static ObjectNode object() {
        return MAPPER.createObjectNode();
    }

    static ArrayNode array() {
        return MAPPER.createArrayNode();
    }

    static JsonNode parse(String text) {
        try {
            return MAPPER.readTree(text);
        } catch (Exception e) {
            throw new IllegalStateException("Ushas bridge answered invalid JSON: " + e.getMessage(), e);
        }
    }

    static ArrayNode strings(String[] values) {
        ArrayNode out = array();
        for (String v : values) out.add(v);
        return out;
    }

    static ObjectNode map(Map<String, String> values) {
        ObjectNode out = object();
        if (values != null) values.forEach(out::put);
        return out;
    }

    static Map<String, String> toMap(JsonNode node) {
        Map<String, String> out = new HashMap<>();
        if (node == null || node.isNull()) return out;
        Iterator<Map.Entry<String, JsonNode>> it = node.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            out.put(e.getKey(), e.getValue().isNull() ? null : e.getValue().asText());
        }
        return out;
    }

    static String[] toStrings(JsonNode node) {
        List<String> out = new ArrayList<>();
        if (node != null) for (JsonNode n : node) out.add(n.asText());
        return out.toArray(new String[0]);
    }

    static String text(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }
}
