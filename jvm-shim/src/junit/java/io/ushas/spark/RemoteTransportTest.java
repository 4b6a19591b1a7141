package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The direct transport of remote mode: the request the service gets, and answers, errors and failures as the
 *  shim gets them from Python's forwarder. A local HTTP server stands for the service. */
class RemoteTransportTest {
    /** A 1-s bridge timeout: for the unreachable and silent services, whose error is the timeout. */
    private static final Bridge.BridgeOptions OPTIONS = new Bridge.BridgeOptions("rem", "python3", 1, 1, 1, false);
    /** Where an answer is expected: a generous timeout, so a loaded machine cannot turn it into ServiceUnreachable. */
    private static final Bridge.BridgeOptions ANSWERING = new Bridge.BridgeOptions("rem", "python3", 60, 1, 1, false);

    /** A one-answer service on a free loopback port; records what it was sent. */
    private static final class Service implements AutoCloseable {
        final HttpServer server;
        final List<String> paths = new ArrayList<>();
        final List<Map<String, List<String>>> headers = new ArrayList<>();
        final List<String> bodies = new ArrayList<>();

        Service(int status, String answer, String type) throws IOException {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            server.createContext("/", exchange -> {
                paths.add(exchange.getRequestURI().getPath());
                headers.add(exchange.getRequestHeaders());
                bodies.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
                byte[] out = answer.getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().add("Content-Type", type);
                exchange.sendResponseHeaders(status, out.length);
                try (OutputStream o = exchange.getResponseBody()) {
                    o.write(out);
                }
            });
            server.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort();
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }

    private static RemoteTransport transport(String url, String... ops) {
        ObjectNode t = Json.object().put("url", url).put("ops_url", url + "/api/v1/catalog/ops/")
                .put("token", "ushas_abc_secret");
        for (String op : ops) t.withArray("ops").add(op);
        return RemoteTransport.of(t);
    }

    private static ObjectNode request() {
        ObjectNode r = Json.object();
        ObjectNode ctx = r.putObject("ctx").put("uri", "http://x").put("catalog", "main").put("user", "admin")
                .put("user_source", "spark").put("authorization", false);
        ctx.putObject("remote").put("token", "ushas_abc_secret");
        r.set("namespace", Json.strings(new String[] {"db"}));
        r.put("name", "t").put("deadline_ms", 1L);
        return r;
    }

    @Test
    void onlyWhatPythonListsGoesDirect() {
        assertNull(RemoteTransport.of(null));
        assertNull(RemoteTransport.of(Json.object().put("ops_url", "http://h/").put("token", "t")));  // no ops
        RemoteTransport t = transport("http://127.0.0.1:1", "load_table");
        assertTrue(t.serves("load_table"));
        assertFalse(t.serves("commit_write"));
    }

    @Test
    void theServiceGetsTheRequestWithoutTheClientsIdentityAndTheAnswerIsItsOwn() throws IOException {
        try (Service s = new Service(200, "{\"unchanged\":true}", "application/json")) {
            ObjectNode sent = request();
            JsonNode answer = transport(s.url(), "load_table").call("load_table", sent, ANSWERING);
            assertEquals("{\"unchanged\":true}", answer.toString());
            assertEquals("/api/v1/catalog/ops/load_table", s.paths.get(0));
            assertEquals("Bearer ushas_abc_secret", s.headers.get(0).get("Authorization").get(0));
            assertEquals("60000", s.headers.get(0).get("X-ushas-timeout-ms").get(0));
            JsonNode body = Json.parse(s.bodies.get(0));
            for (String k : new String[] {"remote", "user", "user_source", "authorization"}) {
                assertFalse(body.get("ctx").has(k), k);
            }
            assertFalse(body.has("deadline_ms"));
            assertEquals("main", body.get("ctx").get("catalog").asText());
            assertTrue(sent.get("ctx").has("remote"), "the catalog's own request is not changed");
        }
    }

    @Test
    void anErrorAnswerIsTheAnswer() throws IOException {
        String error = "{\"error\":{\"type\":\"PermissionDenied\",\"message\":\"no\",\"errorClass\":\"INSUFFICIENT_PERMISSIONS\"}}";
        try (Service s = new Service(403, error, "application/json")) {
            assertEquals(error, transport(s.url(), "load_table").call("load_table", request(), ANSWERING).toString());
        }
    }

    @Test
    void notAnUshasServiceIsAClearError() throws IOException {
        try (Service s = new Service(502, "<html>bad gateway</html>", "text/html")) {
            Errors.UshasBridgeException e = assertThrows(Errors.UshasBridgeException.class,
                    () -> transport(s.url(), "load_table").call("load_table", request(), ANSWERING));
            assertTrue(e.getMessage().contains("answered 'load_table' with HTTP 502 and no JSON answer"), e.getMessage());
        }
    }

    @Test
    void unreachableAndSilentServicesAreServiceUnreachable() throws IOException {
        int port;
        try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        String url = "http://127.0.0.1:" + port;
        JsonNode error = transport(url, "load_table").call("load_table", request(), OPTIONS).get("error");
        assertEquals("ServiceUnreachable", error.get("type").asText());
        assertTrue(error.get("message").asText().startsWith("ushas service at " + url + " unreachable: "));
        try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {  // never answers
            String quiet = "http://127.0.0.1:" + silent.getLocalPort();
            JsonNode e = transport(quiet, "load_table").call("load_table", request(), OPTIONS).get("error");
            assertEquals("ServiceUnreachable", e.get("type").asText());
            assertTrue(e.get("message").asText().contains("unreachable: no answer within 1 s"), e.toString());
        }
    }
}
