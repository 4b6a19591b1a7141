package io.ushas.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Remote mode (docs/service.md, "Remote mode"): a catalog whose {@code uri} is {@code http(s)://host:port}
 * is served by {@code ushas serve}. Adaptation only: the options Python's forwarder
 * ({@code ushas_catalog.spark.remote}) needs go into the request context as they are, under
 * {@code remote}: {@code token}, {@code token_file}, and {@code set}, the catalog options that are set
 * among those remote mode refuses ({@code user}, {@code authorization}); Python decides what they mean.
 */
final class RemoteOptions {
    private RemoteOptions() {}

    static boolean remote(String uri) {
        String u = uri == null ? "" : uri.trim().toLowerCase(java.util.Locale.ROOT);
        return u.startsWith("http://") || u.startsWith("https://");
    }

    static void describe(ObjectNode context, CaseInsensitiveStringMap options) {
        if (!remote(options.get("uri"))) return;
        ObjectNode remote = context.putObject("remote");
        if (options.get("token") != null) remote.put("token", options.get("token"));
        if (options.get("token-file") != null) remote.put("token_file", options.get("token-file"));
        ArrayNode set = remote.putArray("set");
        for (String key : new String[] {"user", "authorization"}) {
            if (options.containsKey(key)) set.add(key);
        }
    }
}
