package io.ushas.spark;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@link RemoteTransport}'s HTTP exchange for an {@code http://} service: one kept-alive plain socket per calling
 * thread ({@code TCP_NODELAY}), a minimal HTTP/1.1 request whose header bytes are made once per op and token, and
 * an answer framed by its {@code Content-Length}. Only what {@code HttpURLConnection} does per call (URL parsing,
 * its keep-alive cache, header maps, stream wrappers) is left out; the service gets the same request. An answer
 * this class does not frame (no {@code Content-Length}, a chunked or 1xx answer) gives {@code null}: the
 * caller asks again through {@code HttpURLConnection} (only read ops come here, asking twice changes nothing).
 * An I/O error on a reused connection before any answer byte (the service closed it while it was idle) is tried
 * once more on a new connection; a timeout is never retried.
 */
final class PlainHttp {
    /** the largest answer head read (the service's own request head limit) */
    static final int MAX_HEAD = 65536;

    /** a status and body */
    record Answer(int status, byte[] body) {
    }

    private record Head(String token, int timeoutMs, byte[] bytes) {
    }

    private static final class Conn {
        final Socket socket;
        final InputStream in;
        byte[] buf = new byte[8192];
        boolean answering;

        Conn(Socket socket) throws IOException {
            this.socket = socket;
            this.in = socket.getInputStream();
        }
    }

    private final String host;
    private final int port;
    private final String hostHeader;
    private final String path;
    private final ThreadLocal<Conn> conns = new ThreadLocal<>();
    private final Map<String, Head> heads = new ConcurrentHashMap<>();

    private PlainHttp(String host, int port, String hostHeader, String path) {
        this.host = host;
        this.port = port;
        this.hostHeader = hostHeader;
        this.path = path;
    }

    /** The exchange for an {@code http://} ops URL, or null (https and anything else: HttpURLConnection). */
    static PlainHttp of(String opsUrl) {
        URI u;
        try {
            u = URI.create(opsUrl);
        } catch (IllegalArgumentException e) {
            return null;
        }
        if (!"http".equalsIgnoreCase(u.getScheme()) || u.getHost() == null || u.getRawUserInfo() != null
                || u.getRawQuery() != null || u.getRawFragment() != null || u.getRawPath() == null) {
            return null;
        }
        String hostHeader = u.getPort() == -1 || u.getPort() == 80 ? u.getHost() : u.getHost() + ":" + u.getPort();
        return new PlainHttp(u.getHost(), u.getPort() == -1 ? 80 : u.getPort(), hostHeader, u.getRawPath());
    }

    /** The service's answer to {@code POST <ops URL><op>}, or null when it must be asked through
     *  HttpURLConnection. */
    Answer post(String op, String token, int timeoutMs, byte[] body) throws IOException {
        byte[] head = head(op, token, timeoutMs);
        byte[] length = ("Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1);
        byte[] request = Arrays.copyOf(head, head.length + length.length + body.length);
        System.arraycopy(length, 0, request, head.length, length.length);
        System.arraycopy(body, 0, request, head.length + length.length, body.length);
        Conn c = conns.get();
        boolean reused = c != null;
        if (c == null) c = connect(timeoutMs);
        try {
            return exchange(c, request, timeoutMs);
        } catch (SocketTimeoutException e) {
            close(c);
            throw e;
        } catch (IOException e) {
            close(c);
            if (!reused || c.answering) throw e;
        }
        Conn fresh = connect(timeoutMs);  // the service closed the idle connection: once on a new one
        try {
            return exchange(fresh, request, timeoutMs);
        } catch (IOException e) {
            close(fresh);
            throw e;
        }
    }

    /** Whether the calling thread holds an open connection (for tests). */
    boolean connected() {
        return conns.get() != null;
    }

    private byte[] head(String op, String token, int timeoutMs) {
        Head h = heads.get(op);
        if (h == null || !h.token().equals(token) || h.timeoutMs() != timeoutMs) {
            String text = "POST " + path + URLEncoder.encode(op, StandardCharsets.UTF_8) + " HTTP/1.1\r\n"
                    + "Host: " + hostHeader + "\r\n"
                    + "Authorization: Bearer " + token + "\r\n"
                    + "Content-Type: application/json\r\n"
                    + "X-Ushas-Timeout-Ms: " + timeoutMs + "\r\n";
            h = new Head(token, timeoutMs, text.getBytes(StandardCharsets.UTF_8));
            heads.put(op, h);
        }
        return h.bytes();
    }

    private Conn connect(int timeoutMs) throws IOException {
        Socket s = new Socket(Proxy.NO_PROXY);
        try {
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(host, port), timeoutMs);
            Conn c = new Conn(s);
            conns.set(c);
            return c;
        } catch (IOException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    private void close(Conn c) {
        if (conns.get() == c) conns.remove();
        try {
            c.socket.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    private Answer exchange(Conn c, byte[] request, int timeoutMs) throws IOException {
        c.answering = false;
        c.socket.setSoTimeout(timeoutMs);
        c.socket.getOutputStream().write(request);
        byte[] buf = c.buf;
        int n = 0;
        int end = -1;
        int from = 3;
        while (end < 0) {
            if (n == buf.length) {
                if (n >= MAX_HEAD) throw new IOException("answer head over " + MAX_HEAD + " bytes");
                buf = c.buf = Arrays.copyOf(buf, Math.min(MAX_HEAD, 2 * n));
            }
            int r = c.in.read(buf, n, buf.length - n);
            if (r < 0) throw new IOException("the service closed the connection");
            c.answering = true;
            n += r;
            for (int i = from; i < n; i++) {
                if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
                    end = i + 1;
                    break;
                }
            }
            from = Math.max(3, n);
        }
        String[] lines = new String(buf, 0, end - 4, StandardCharsets.ISO_8859_1).split("\r\n");
        if (!lines[0].startsWith("HTTP/1.") || lines[0].length() < 12 || lines[0].charAt(8) != ' ') {
            throw new IOException("not an HTTP answer: " + lines[0]);
        }
        int status;
        try {
            status = Integer.parseInt(lines[0].substring(9, 12));
        } catch (NumberFormatException e) {
            throw new IOException("not an HTTP answer: " + lines[0]);
        }
        long length = -1;
        boolean keep = lines[0].startsWith("HTTP/1.1");
        boolean framed = status >= 200;
        for (int i = 1; i < lines.length; i++) {
            String line = lines[i];
            int colon = line.indexOf(':');
            if (colon <= 0) continue;
            String name = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = line.substring(colon + 1).trim();
            switch (name) {
                case "content-length" -> {
                    try {
                        long l = Long.parseLong(value);
                        if (length >= 0 && l != length || l < 0) framed = false;
                        length = l;
                    } catch (NumberFormatException e) {
                        framed = false;
                    }
                }
                case "transfer-encoding" -> framed = false;
                case "connection" -> {
                    String v = value.toLowerCase(Locale.ROOT);
                    if (v.contains("close")) keep = false;
                    else if (v.contains("keep-alive")) keep = true;
                }
                default -> {
                }
            }
        }
        if (!framed || length < 0 || length > Integer.MAX_VALUE - 16) {
            close(c);
            return null;
        }
        byte[] body = new byte[(int) length];
        int have = Math.min(n - end, body.length);
        System.arraycopy(buf, end, body, 0, have);
        while (have < body.length) {
            int r = c.in.read(body, have, body.length - have);
            if (r < 0) throw new IOException("the service closed the connection within an answer");
            have += r;
        }
        if (!keep || n - end > body.length) close(c);  // closed by the service, or more than the answer: not reused
        return new Answer(status, body);
    }
}
