import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One catalog op sent to ushas services the way the shim's {@code io.ushas.spark.RemoteTransport} sends it (an
 * {@code HttpURLConnection} per call on the JVM's keep-alive connections, the same headers), the services
 * called alternately, round by round; prints each one's median in ms. For bench/remote_profile.py --jvm.
 *
 * <p>Arguments: the op URLs (comma-separated), the token, the request body, the rounds.
 */
public final class OpsLoop {
    private OpsLoop() {
    }

    private static double call(String url, String token, byte[] body) throws IOException {
        long began = System.nanoTime();
        HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection(Proxy.NO_PROXY);
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setUseCaches(false);
        c.setConnectTimeout(60_000);
        c.setReadTimeout(60_000);
        c.setRequestProperty("Authorization", "Bearer " + token);
        c.setRequestProperty("Content-Type", "application/json");
        c.setRequestProperty("X-Ushas-Timeout-Ms", "60000");
        try (OutputStream out = c.getOutputStream()) {
            out.write(body);
        }
        int status = c.getResponseCode();
        try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
            if (in != null) in.readAllBytes();  // to the end: the connection is reused
        }
        if (status != 200) throw new IOException(url + " answered HTTP " + status);
        return (System.nanoTime() - began) / 1e6;
    }

    /** One kept-alive plain socket per URL: a minimal HTTP/1.1 request, a Content-Length answer (the shim's
     *  {@code http://} path). */
    private static final java.util.Map<String, Socket> SOCKETS = new java.util.HashMap<>();

    private static double raw(String url, String token, byte[] body) throws IOException {
        long began = System.nanoTime();
        URI u = URI.create(url);
        Socket s = SOCKETS.get(url);
        if (s == null) {
            s = new Socket(Proxy.NO_PROXY);
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(u.getHost(), u.getPort()), 60_000);
            s.setSoTimeout(60_000);
            SOCKETS.put(url, s);
        }
        byte[] head = ("POST " + u.getRawPath() + " HTTP/1.1\r\nHost: " + u.getHost() + ":" + u.getPort()
                + "\r\nAuthorization: Bearer " + token + "\r\nContent-Type: application/json\r\n"
                + "X-Ushas-Timeout-Ms: 60000\r\nContent-Length: " + body.length + "\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1);
        byte[] req = Arrays.copyOf(head, head.length + body.length);
        System.arraycopy(body, 0, req, head.length, body.length);
        s.getOutputStream().write(req);
        InputStream in = s.getInputStream();
        byte[] buf = new byte[8192];
        int n = 0;
        int end = -1;
        while (end < 0) {
            int r = in.read(buf, n, buf.length - n);
            if (r < 0) throw new IOException("closed");
            n += r;
            for (int i = 3; i < n; i++) {
                if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
                    end = i + 1;
                    break;
                }
            }
        }
        String headers = new String(buf, 0, end, StandardCharsets.ISO_8859_1).toLowerCase();
        int at = headers.indexOf("content-length:");
        int len = Integer.parseInt(headers.substring(at + 15, headers.indexOf('\r', at)).trim());
        while (n < end + len) {
            int r = in.read(buf, n, buf.length - n);
            if (r < 0) throw new IOException("closed");
            n += r;
        }
        if (!headers.startsWith("http/1.1 200")) throw new IOException(url + " answered " + headers);
        return (System.nanoTime() - began) / 1e6;
    }

    public static void main(String[] args) throws IOException {
        String[] urls = args[0].split(",");
        byte[] body = args[2].getBytes(StandardCharsets.UTF_8);
        int rounds = Integer.parseInt(args[3]);
        for (int i = 0; i < 1_000; i++) {  // the JIT, the connections
            for (String url : urls) call(url, args[1], body);
        }
        for (int i = 0; i < 1_000; i++) {
            for (String url : urls) raw(url, args[1], body);
        }
        double[][] ms = new double[urls.length][rounds];
        double[][] rs = new double[urls.length][rounds];
        for (int i = 0; i < rounds; i++) {
            for (int j = 0; j < urls.length; j++) {
                ms[j][i] = call(urls[j], args[1], body);
                rs[j][i] = raw(urls[j], args[1], body);
            }
        }
        for (int j = 0; j < urls.length; j++) {
            Arrays.sort(ms[j]);
            Arrays.sort(rs[j]);
            System.out.printf("%d %.3f %.3f%n", j, ms[j][rounds / 2], rs[j][rounds / 2]);
        }
    }
}
