package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;

/**
 * Remote mode's direct transport (docs/service.md, "Remote mode"): the ops Python's forwarder lists in its
 * {@code open} answer ({@code transport}: the service's ops URL, the catalog's token, the ops) go from the JVM
 * straight to the service's {@code POST /api/v1/catalog/ops/<op>}, one HTTP round trip on a keep-alive
 * connection instead of a Py4J call into Python and then HTTP. Adaptation only, the same contract as
 * {@code ushas_catalog.spark.remote.forward_text}: the same request body (without the shim's identity fields
 * and the token, which the service never takes from a body), the caller's wait in {@code X-Ushas-Timeout-Ms},
 * the service's answer as it is (an error answer included, so Spark's error classes are the same), an
 * unreachable or silent service a {@code ServiceUnreachable} error ({@code ushas service at URL unreachable}).
 * Python decides which ops come here, the token and the URL (after checking the catalog's options); the
 * service decides who calls and checks every call as before. An {@code Unauthorized} answer is asked again
 * through Python, which reads a {@code token-file} anew and hands back the token that worked: the next calls
 * send that one. For an {@code http://} service the exchange is {@link PlainHttp}'s (one kept-alive socket
 * per calling thread), for {@code https://} (and answers it does not frame) the JVM's {@code HttpURLConnection}.
 */
final class RemoteTransport {
    /** the shim's context fields a service never gets from a client (Python's {@code _PRIVATE_CTX}) */
    private static final String[] PRIVATE_CTX = {"remote", "user", "user_source", "authorization"};
    /** Python's {@code ushas_catalog.spark.remote.RETRIED} and {@code TOKEN_FIELD} */
    private static final String RETRIED = "transport_retry";
    private static final String TOKEN_FIELD = "transport_token";

    private final String opsUrl;
    private final String shown;
    /** the catalog's token: replaced by the one Python resolves anew when the service refuses it (a
     *  rotated {@code token-file}) */
    private volatile String token;
    private final Set<String> ops;
    /** the exchange for an {@code http://} service (a kept-alive socket per thread), null for https */
    private final PlainHttp plain;
    /** for benchmarks and tests ({@link #status}): the calls answered here, their time in {@link #call} and
     *  the part of it spent in the HTTP exchange (connection, request, answer read) */
    private final LongAdder calls = new LongAdder();
    private final LongAdder callNanos = new LongAdder();
    private final LongAdder httpNanos = new LongAdder();

    private RemoteTransport(String opsUrl, String shown, String token, Set<String> ops) {
        this.opsUrl = opsUrl;
        this.shown = shown;
        this.token = token;
        this.ops = ops;
        this.plain = PlainHttp.of(opsUrl);
    }

    /** The transport Python's {@code open} answer describes, or null (no {@code transport}: every op goes
     *  through Python). */
    static RemoteTransport of(JsonNode transport) {
        if (transport == null || !transport.isObject()) return null;
        Set<String> ops = new HashSet<>();
        for (JsonNode op : transport.path("ops")) ops.add(op.asText());
        String url = Json.text(transport, "ops_url");
        String token = Json.text(transport, "token");
        if (url == null || token == null || ops.isEmpty()) return null;
        return new RemoteTransport(url, Json.text(transport, "url"), token, Set.copyOf(ops));
    }

    boolean serves(String op) {
        return ops.contains(op);
    }

    /** One op answered by the service (its error answers as they are); Python for an {@code Unauthorized}. */
    JsonNode call(String op, ObjectNode request, Bridge.BridgeOptions options) {
        long began = System.nanoTime();
        try {
            return exchange(op, request, options);
        } finally {
            calls.increment();
            callNanos.add(System.nanoTime() - began);
        }
    }

    /** The calls answered here and their time (ms) as JSON: {@code calls}, {@code call_ms} (in
     *  {@link #call}: the request's JSON, the HTTP exchange, the answer's JSON), {@code http_ms}. */
    String status() {
        return Json.object().put("calls", calls.sum()).put("call_ms", callNanos.sum() / 1e6)
                .put("http_ms", httpNanos.sum() / 1e6).toString();
    }

    private JsonNode exchange(String op, ObjectNode request, Bridge.BridgeOptions options) {
        ObjectNode body = request.deepCopy();
        body.remove("deadline_ms");  // the service's deadline comes from the header, on its own clock
        JsonNode ctx = body.get("ctx");
        if (ctx instanceof ObjectNode c) {
            for (String k : PRIVATE_CTX) c.remove(k);
        }
        int timeoutMs = (int) Math.min(Integer.MAX_VALUE, 1000L * options.timeoutSeconds());
        byte[] sent = body.toString().getBytes(StandardCharsets.UTF_8);
        int status;
        byte[] data;
        HttpURLConnection[] opened = new HttpURLConnection[1];
        long sending = System.nanoTime();
        try {
            PlainHttp.Answer a = plain == null ? null : plain.post(op, token, timeoutMs, sent);
            if (a == null) a = viaUrlConnection(op, sent, timeoutMs, opened);
            status = a.status();
            data = a.body();
        } catch (SocketTimeoutException e) {
            if (opened[0] != null) opened[0].disconnect();
            return unreachable("no answer within " + options.timeoutSeconds() + " s (spark.sql.catalog."
                    + options.catalog() + ".bridge.timeout)");
        } catch (IOException | IllegalArgumentException e) {
            if (opened[0] != null) opened[0].disconnect();
            return unreachable(e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
        } finally {
            httpNanos.add(System.nanoTime() - sending);
        }
        if (status == 401) return retried(op, request, options);
        JsonNode answer = null;
        try {
            answer = data.length > 0 && data[0] == '{' ? Json.MAPPER.readTree(data) : null;
        } catch (IOException ignored) {
            // answered below
        }
        if (answer == null || (status != 200 && !(answer.get("error") instanceof ObjectNode))) {
            throw new Errors.UshasBridgeException("Ushas catalog: the ushas service at " + shown + " answered '" + op
                    + "' with HTTP " + status + " and no JSON answer (is it an ushas service?)");
        }
        return answer;
    }

    /** The exchange through the JVM's HttpURLConnection (https, and answers {@link PlainHttp} does not frame). */
    private PlainHttp.Answer viaUrlConnection(String op, byte[] sent, int timeoutMs, HttpURLConnection[] opened)
            throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create(opsUrl + URLEncoder.encode(op, StandardCharsets.UTF_8))
                .toURL().openConnection(Proxy.NO_PROXY);
        opened[0] = c;
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setUseCaches(false);
        c.setConnectTimeout(timeoutMs);
        c.setReadTimeout(timeoutMs);
        c.setRequestProperty("Authorization", "Bearer " + token);
        c.setRequestProperty("Content-Type", "application/json");
        c.setRequestProperty("X-Ushas-Timeout-Ms", Integer.toString(timeoutMs));
        try (OutputStream out = c.getOutputStream()) {
            out.write(sent);
        }
        int status = c.getResponseCode();
        try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
            // read to the end: the connection is reused
            return new PlainHttp.Answer(status, in == null ? new byte[0] : in.readAllBytes());
        }
    }

    /** An op the service refused the token of, asked through Python, which resolves the token again (a
     *  {@code token-file} is read anew) and, when the service took that one, hands it back with the answer:
     *  the next direct calls send it. */
    private JsonNode retried(String op, ObjectNode request, Bridge.BridgeOptions options) {
        ObjectNode marked = request.deepCopy();
        marked.put(RETRIED, true);
        JsonNode answer = Bridge.call(op, marked, options);
        if (answer instanceof ObjectNode o && o.get(TOKEN_FIELD) != null) {
            String fresh = o.remove(TOKEN_FIELD).asText();
            if (!fresh.isEmpty()) token = fresh;
        }
        return answer;
    }

    private JsonNode unreachable(String why) {
        ObjectNode error = Json.object();
        error.putObject("error").put("type", "ServiceUnreachable")
                .put("message", "ushas service at " + shown + " unreachable: " + why);
        return error;
    }
}
