package org.hetsched.storm;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback HTTP proxy in front of a real planner that counts the plugin's calls by method and resource
 * ({@code POST /v1/plans}, {@code GET /v1/plans}, ...): how many planner requests a scheduling round costs.
 */
final class CountingProxy implements AutoCloseable {
    private final URI target;
    private final HttpServer server;
    private final ExecutorService threads = Executors.newFixedThreadPool(32, task -> {
        Thread thread = new Thread(task, "counting-proxy");
        thread.setDaemon(true);
        return thread;
    });
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final AtomicInteger total = new AtomicInteger();
    private final Map<String, Integer> byCall = new TreeMap<>();

    CountingProxy(URI target) throws IOException {
        this.target = target;
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        server.createContext("/", this::forward);
        server.setExecutor(threads);
        server.start();
    }

    URI url() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    int total() {
        return total.get();
    }

    synchronized Map<String, Integer> byCall() {
        return new TreeMap<>(byCall);
    }

    /** {@code POST /v1/plans} for {@code POST /v1/plans}, {@code GET /v1/plans} for {@code GET /v1/plans/abc}. */
    static String callOf(String method, String path) {
        String[] parts = path.split("/");
        String resource = parts.length > 2 ? "/" + parts[1] + "/" + parts[2] : path;
        if (parts.length > 4 && parts[2].equals("tenants")) {
            resource += "/{topology}/" + parts[4];
        } else if (parts.length > 3 && parts[2].equals("tenants")) {
            resource += "/" + parts[3];
        }
        return method + " " + resource;
    }

    private void forward(HttpExchange exchange) throws IOException {
        total.incrementAndGet();
        String path = exchange.getRequestURI().getRawPath();
        synchronized (this) {
            byCall.merge(callOf(exchange.getRequestMethod(), path), 1, Integer::sum);
        }
        try (exchange) {
            byte[] body = exchange.getRequestBody().readAllBytes();
            HttpRequest.Builder request = HttpRequest.newBuilder(target.resolve(exchange.getRequestURI().toString()))
                    .method(exchange.getRequestMethod(), body.length == 0 ? HttpRequest.BodyPublishers.noBody()
                            : HttpRequest.BodyPublishers.ofByteArray(body));
            for (String header : new String[] {"Content-Type", "Authorization", "Accept"}) {
                String value = exchange.getRequestHeaders().getFirst(header);
                if (value != null) {
                    request.header(header, value);
                }
            }
            HttpResponse<byte[]> answer;
            try {
                answer = http.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                exchange.sendResponseHeaders(502, -1);
                return;
            } catch (IOException e) {
                exchange.sendResponseHeaders(502, -1);
                return;
            }
            answer.headers().firstValue("Content-Type").ifPresent(v -> exchange.getResponseHeaders().add("Content-Type", v));
            byte[] out = answer.body();
            exchange.sendResponseHeaders(answer.statusCode(), out.length == 0 ? -1 : out.length);
            if (out.length > 0) {
                try (OutputStream stream = exchange.getResponseBody()) {
                    stream.write(out);
                }
            }
        }
    }

    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
    }
}
