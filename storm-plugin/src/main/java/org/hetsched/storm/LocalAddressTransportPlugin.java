package org.hetsched.storm;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.UnknownHostException;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.apache.storm.Config;
import org.apache.storm.security.auth.ReqContext;
import org.apache.storm.security.auth.SimpleTransportPlugin;
import org.apache.storm.security.auth.ThriftConnectionType;
import org.apache.storm.thrift.TException;
import org.apache.storm.thrift.TProcessor;
import org.apache.storm.thrift.protocol.TBinaryProtocol;
import org.apache.storm.thrift.protocol.TProtocol;
import org.apache.storm.thrift.server.THsHaServer;
import org.apache.storm.thrift.server.TServer;
import org.apache.storm.thrift.transport.TMemoryInputTransport;
import org.apache.storm.thrift.transport.TNonblockingServerSocket;
import org.apache.storm.thrift.transport.TSocket;
import org.apache.storm.thrift.transport.TTransport;
import org.apache.storm.thrift.transport.TTransportException;

/**
 * Storm's plain Thrift transport, with the server listening on the daemon's own address only.
 *
 * <p>Storm 2.8's {@link SimpleTransportPlugin} opens Nimbus's and the supervisors' Thrift servers on every
 * address of the host ({@code new TNonblockingServerSocket(port)}) and Storm has no setting for the address.
 * This one listens on {@code storm.local.hostname} (every address when that is unset), so a cluster whose
 * daemons are named by loopback addresses cannot be reached from the network. Select it with
 * {@code nimbus.thrift.transport} and {@code supervisor.thrift.transport}; every process that reads that
 * setting, the workers included (they talk to their supervisor), needs this jar on its class path. The
 * client side and the wire format (framed binary) are SimpleTransportPlugin's, so clients of the simple
 * transport, such as streamparse's, talk to it unchanged. It adds no authentication.
 */
public class LocalAddressTransportPlugin extends SimpleTransportPlugin {
    private int port;

    @Override
    public TServer getServer(TProcessor processor) throws IOException, TTransportException {
        TNonblockingServerSocket serverTransport = new TNonblockingServerSocket(bindAddress(type, topoConf));
        port = serverTransport.getPort();
        int threads = type.getNumThreads(topoConf);
        int maxBufferSize = type.getMaxBufferSize(topoConf);
        Integer queueSize = type.getQueueSize(topoConf);
        THsHaServer.Args args = new THsHaServer.Args(serverTransport)
                .processor(new RequestContextProcessor(processor))
                .maxWorkerThreads(threads)
                .protocolFactory(new TBinaryProtocol.Factory(false, true, maxBufferSize, -1));
        args.maxReadBufferBytes = maxBufferSize;
        if (queueSize != null) {
            args.executorService(new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS,
                    new ArrayBlockingQueue<>(queueSize)));
        }
        return new THsHaServer(args);
    }

    @Override
    public int getPort() {
        return port;
    }

    /** The daemon's {@code storm.local.hostname} with the server's configured port; every address when it is unset. */
    static InetSocketAddress bindAddress(ThriftConnectionType type, Map<String, Object> conf) throws UnknownHostException {
        int configuredPort = type.getPort(conf);
        Object host = conf.get(Config.STORM_LOCAL_HOSTNAME);
        if (host == null || host.toString().isBlank()) {
            return new InetSocketAddress(configuredPort);
        }
        return new InetSocketAddress(InetAddress.getByName(host.toString().trim()), configuredPort);
    }

    /** As SimpleTransportPlugin's own (private) wrapper: the caller's address and the transport's subject go into the request context. */
    private final class RequestContextProcessor implements TProcessor {
        private final TProcessor wrapped;

        RequestContextProcessor(TProcessor wrapped) {
            this.wrapped = wrapped;
        }

        @Override
        public void process(TProtocol in, TProtocol out) throws TException {
            ReqContext context = ReqContext.context();
            TTransport transport = in.getTransport();
            if (transport instanceof TMemoryInputTransport) {
                try {
                    context.setRemoteAddress(InetAddress.getLocalHost());
                } catch (UnknownHostException e) {
                    throw new TException("the local host has no address", e);
                }
            } else if (transport instanceof TSocket socket) {
                Socket raw = socket.getSocket();
                context.setRemoteAddress(raw.getInetAddress());
            }
            context.setSubject(getDefaultSubject());
            wrapped.process(in, out);
        }
    }
}
