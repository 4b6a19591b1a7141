package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The direct transport's plain-socket HTTP framing against a fake service on a raw loopback socket: the request
 *  it writes, Content-Length answers on one kept-alive connection, a service that closed an idle connection,
 *  answers it leaves to HttpURLConnection. */
class PlainHttpTest {
    /** The client's and the fake's time limit where an answer is expected: generous, so a loaded machine
     *  cannot fail a test meant to check framing (only the silent-service test relies on a timeout). */
    private static final int ANSWER_MS = 60_000;

    /** A service answering each request (read by its Content-Length) with the next of {@code answers} (the
     *  last one repeated), closing the connection after it when {@code closeAfter} says so. */
    private static final class Fake implements AutoCloseable {
        final ServerSocket server;
        final AtomicInteger connections = new AtomicInteger();
        final List<String> requests = new CopyOnWriteArrayList<>();
        final Thread thread;

        Fake(boolean closeAfter, String... answers) throws IOException {
            server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
            thread = new Thread(() -> {
                try {
                    while (true) {
                        try (Socket s = server.accept()) {
                            connections.incrementAndGet();
                            s.setSoTimeout(ANSWER_MS);
                            InputStream in = s.getInputStream();
                            while (true) {
                                String request = readRequest(in);
                                if (request == null) break;
                                requests.add(request);
                                String a = answers[Math.min(requests.size(), answers.length) - 1];
                                s.getOutputStream().write(a.getBytes(StandardCharsets.UTF_8));
                                s.getOutputStream().flush();
                                if (closeAfter) break;
                            }
                        } catch (IOException ignored) {
                            // the next connection
                        }
                    }
                } catch (RuntimeException ignored) {
                    // closed
                }
            });
            thread.setDaemon(true);
            thread.start();
        }

        static String readRequest(InputStream in) throws IOException {
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            int b;
            while ((b = in.read()) >= 0) {
                head.write(b);
                String h = head.toString(StandardCharsets.ISO_8859_1);
                if (h.endsWith("\r\n\r\n")) {
                    int at = h.toLowerCase(Locale.ROOT).indexOf("content-length: ");
                    int length = Integer.parseInt(h.substring(at + 16, h.indexOf('\r', at)));
                    return h + new String(in.readNBytes(length), StandardCharsets.UTF_8);
                }
            }
            return null;
        }

        String url() {
            return "http://127.0.0.1:" + server.getLocalPort() + "/api/v1/catalog/ops/";
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }

    private static String ok(String body) {
        return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
    }

    private static final byte[] BODY = "{\"name\":\"t\"}".getBytes(StandardCharsets.UTF_8);

    @Test
    void onlyPlainHttpUrls() {
        assertNull(PlainHttp.of("https://h:1/api/v1/catalog/ops/"));
        assertNull(PlainHttp.of("http://u:p@h:1/ops/"));
        assertNull(PlainHttp.of("not a url"));
        assertTrue(PlainHttp.of("http://h:1/api/v1/catalog/ops/") != null);
    }

    @Test
    void theRequestAndContentLengthAnswersOnOneKeptAliveConnection() throws IOException {
        try (Fake f = new Fake(false, ok("{\"unchanged\":true}"),
                "HTTP/1.1 401 UNAUTHORIZED\r\nContent-Length: 2\r\n\r\n{}")) {
            PlainHttp p = PlainHttp.of(f.url());
            PlainHttp.Answer a = p.post("load_table", "ushas_abc_secret", ANSWER_MS, BODY);
            assertEquals(200, a.status());
            assertEquals("{\"unchanged\":true}", new String(a.body(), StandardCharsets.UTF_8));
            PlainHttp.Answer refused = p.post("load_table", "ushas_abc_secret", ANSWER_MS, BODY);
            assertEquals(401, refused.status(), "a refusal is an answer (RemoteTransport asks Python again)");
            assertEquals("{}", new String(refused.body(), StandardCharsets.UTF_8));
            assertTrue(p.connected());
            assertEquals(1, f.connections.get(), "one kept-alive connection");
            String r = f.requests.get(0);
            assertTrue(r.startsWith("POST /api/v1/catalog/ops/load_table HTTP/1.1\r\n"), r);
            assertTrue(r.contains("\r\nHost: 127.0.0.1:" + f.server.getLocalPort() + "\r\n"), r);
            assertTrue(r.contains("\r\nAuthorization: Bearer ushas_abc_secret\r\n"), r);
            assertTrue(r.contains("\r\nX-Ushas-Timeout-Ms: " + ANSWER_MS + "\r\n"), r);
            assertTrue(r.endsWith("Content-Length: " + BODY.length + "\r\n\r\n{\"name\":\"t\"}"), r);
        }
    }

    @Test
    void aConnectionTheServiceClosedIsReplacedOnce() throws IOException {
        try (Fake f = new Fake(true, ok("{\"n\":1}"), ok("{\"n\":2}"))) {
            PlainHttp p = PlainHttp.of(f.url());
            assertEquals("{\"n\":1}", new String(p.post("load_table", "t", ANSWER_MS, BODY).body(), StandardCharsets.UTF_8));
            assertEquals("{\"n\":2}", new String(p.post("load_table", "t", ANSWER_MS, BODY).body(), StandardCharsets.UTF_8));
            assertEquals(2, f.connections.get());
            assertEquals(2, f.requests.size(), "the closed connection's write reached no service");
        }
    }

    @Test
    void connectionCloseAndUnframedAnswers() throws IOException {
        try (Fake f = new Fake(false, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")) {
            PlainHttp p = PlainHttp.of(f.url());
            assertEquals("{}", new String(p.post("load_table", "t", ANSWER_MS, BODY).body(), StandardCharsets.UTF_8));
            assertFalse(p.connected(), "Connection: close is not reused");
        }
        String[] unframed = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
                             "HTTP/1.1 100 Continue\r\n\r\n"};
        for (String answer : unframed) {
            try (Fake f = new Fake(false, answer)) {
                PlainHttp p = PlainHttp.of(f.url());
                assertNull(p.post("load_table", "t", ANSWER_MS, BODY), answer);
                assertFalse(p.connected());
            }
        }
    }

    @Test
    void anUnframedAnswerIsAskedThroughHttpUrlConnection() throws IOException {
        String body = "{\"unchanged\":true}";
        try (Fake f = new Fake(true, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body)) {
            ObjectNode t = Json.object().put("url", "http://x").put("ops_url", f.url()).put("token", "t");
            t.withArray("ops").add("load_table");
            ObjectNode request = Json.object();
            request.putObject("ctx").put("catalog", "main");
            Bridge.BridgeOptions options = new Bridge.BridgeOptions("rem", "python3", 60, 1, 1, false);
            assertEquals(body, RemoteTransport.of(t).call("load_table", request, options).toString());
            assertEquals(2, f.requests.size(), "asked once more, by HttpURLConnection");
        }
    }

    @Test
    void aSilentServiceTimesOutWithoutARetry() throws IOException {
        try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            PlainHttp p = PlainHttp.of("http://127.0.0.1:" + silent.getLocalPort() + "/ops/");
            assertThrows(SocketTimeoutException.class, () -> p.post("load_table", "t", 300, BODY));
            assertFalse(p.connected());
        }
    }
}
