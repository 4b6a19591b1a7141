import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.Proxy;
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

    public static void main(String[] args) throws IOException {
        String[] urls = args[0].split(",");
        byte[] body = args[2].getBytes(StandardCharsets.UTF_8);
        int rounds = Integer.parseInt(args[3]);
        for (int i = 0; i < 1_000; i++) {  // the JIT, the connections
            for (String url : urls) call(url, args[1], body);
        }
        double[][] ms = new double[urls.length][rounds];
        for (int i = 0; i < rounds; i++) {
            for (int j = 0; j < urls.length; j++) ms[j][i] = call(urls[j], args[1], body);
        }
        for (int j = 0; j < urls.length; j++) {
            Arrays.sort(ms[j]);
            System.out.printf("%d %.3f%n", j, ms[j][rounds / 2]);
        }
    }
}
