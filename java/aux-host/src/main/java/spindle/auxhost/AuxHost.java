/*
 * The Java host of Spindle's NodeManager auxiliary services.
 *
 * One JVM per NodeManager runs this class. It reads requests from stdin and writes one reply per
 * request to stdout, in the frames crates/nm/src/aux_services/frame.rs describes (a 4-byte
 * big-endian length, at most MAX_FRAME bytes, then the payload); everything else the JVM prints
 * goes to stderr, which the NodeManager copies into its log. Each service is created as Hadoop
 * 3.3.4's AuxServices creates it: with a .classpath, in a Hadoop ApplicationClassLoader of its own
 * (honouring .system-classes), wrapped as Hadoop's AuxiliaryServiceWithCustomClassLoader wraps it
 * (see Isolated); without one, from this JVM's class path. Its callbacks are Hadoop's
 * AuxiliaryService methods. A bad frame is fatal (exit 3); end of input stops every service and
 * exits 0, so a NodeManager that died leaves no host behind.
 */
package spindle.auxhost;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalDirAllocator;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.util.ApplicationClassLoader;
import org.apache.hadoop.util.ReflectionUtils;
import org.apache.hadoop.util.StringUtils;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.apache.hadoop.yarn.server.api.ContainerInitializationContext;
import org.apache.hadoop.yarn.server.api.ContainerTerminationContext;
import org.apache.hadoop.yarn.server.api.ContainerType;

public final class AuxHost {
  static final int MAX_FRAME = 16 << 20;
  static final int OP_HELLO = 1, OP_INIT = 2, OP_START = 3, OP_APP_INIT = 4, OP_APP_STOP = 5,
      OP_CONTAINER_INIT = 6, OP_CONTAINER_STOP = 7, OP_STOP = 8;

  private final Map<String, AuxiliaryService> services = new LinkedHashMap<>();
  private Configuration conf = new Configuration(false);

  public static void main(String[] args) throws Exception {
    // stdout carries the frames only: whatever else writes to System.out goes to stderr.
    DataOutputStream out = new DataOutputStream(
        new BufferedOutputStream(new FileOutputStream(FileDescriptor.out)));
    System.setOut(System.err);
    DataInputStream in = new DataInputStream(
        new BufferedInputStream(new FileInputStream(FileDescriptor.in)));
    AuxHost host = new AuxHost();
    int code = host.serve(in, out);
    host.stopAll();
    System.err.flush();
    // Services may leave non-daemon threads behind.
    System.exit(code);
  }

  int serve(DataInputStream in, DataOutputStream out) throws IOException {
    while (true) {
      byte[] frame;
      try {
        int len = in.readInt();
        if (len < 0 || len > MAX_FRAME) {
          System.err.println("aux-host: a frame of " + (len & 0xffffffffL)
              + " bytes is over the limit; stopping");
          return 3;
        }
        frame = new byte[len];
        in.readFully(frame);
      } catch (EOFException e) {
        return 0;
      }
      byte[] reply;
      try {
        reply = handle(new Reader(frame));
      } catch (BadFrame e) {
        System.err.println("aux-host: a bad frame (" + e.getMessage() + "); stopping");
        return 3;
      } catch (Throwable t) {
        System.err.println("aux-host: the request failed: " + t);
        t.printStackTrace();
        Writer w = new Writer(1);
        w.str(describe(t));
        reply = w.bytes();
      }
      out.writeInt(reply.length);
      out.write(reply);
      out.flush();
    }
  }

  private static String describe(Throwable t) {
    StringBuilder sb = new StringBuilder(String.valueOf(t));
    for (Throwable c = t.getCause(); c != null && c != t; c = c.getCause()) {
      sb.append("; caused by ").append(c);
      if (c.getCause() == c) {
        break;
      }
    }
    return sb.toString();
  }

  private AuxiliaryService service(String name) throws BadFrame {
    AuxiliaryService s = services.get(name);
    if (s == null) {
      throw new IllegalStateException("no auxiliary service " + name + " in this host");
    }
    return s;
  }

  private byte[] handle(Reader r) throws Exception {
    int op = r.u8();
    Writer ok = new Writer(0);
    switch (op) {
      case OP_HELLO: {
        Configuration c = new Configuration(false);
        for (Map.Entry<String, String> e : r.pairs().entrySet()) {
          c.set(e.getKey(), e.getValue());
        }
        r.end();
        conf = c;
        return ok.bytes();
      }
      case OP_INIT: {
        String name = r.str();
        String className = r.str();
        String classpath = r.str();
        String systemClasses = r.str();
        String recoveryPath = r.str();
        Map<String, String> props = r.pairs();
        r.end();
        init(name, className, classpath, systemClasses, recoveryPath, props);
        return ok.bytes();
      }
      case OP_START: {
        String name = r.str();
        r.end();
        AuxiliaryService s = service(name);
        s.start();
        ByteBuffer meta = s.getMetaData();
        if (meta == null) {
          ok.u8(0);
        } else {
          ByteBuffer m = meta.duplicate();
          byte[] b = new byte[m.remaining()];
          m.get(b);
          ok.u8(1);
          ok.bytes(b);
        }
        return ok.bytes();
      }
      case OP_APP_INIT: {
        String name = r.str();
        String user = r.str();
        String app = r.str();
        byte[] data = r.bytes();
        r.end();
        service(name).initializeApplication(new ApplicationInitializationContext(
            user, ApplicationId.fromString(app), ByteBuffer.wrap(data)));
        return ok.bytes();
      }
      case OP_APP_STOP: {
        String name = r.str();
        String app = r.str();
        r.end();
        service(name).stopApplication(
            new ApplicationTerminationContext(ApplicationId.fromString(app)));
        return ok.bytes();
      }
      case OP_CONTAINER_INIT:
      case OP_CONTAINER_STOP: {
        String name = r.str();
        String user = r.str();
        ContainerId id = ContainerId.fromString(r.str());
        long memory = r.i64();
        int vcores = r.i32();
        ContainerType type = r.u8() == 0 ? ContainerType.APPLICATION_MASTER : ContainerType.TASK;
        r.end();
        Resource res = Resource.newInstance(memory, vcores);
        if (op == OP_CONTAINER_INIT) {
          service(name).initializeContainer(
              new ContainerInitializationContext(user, id, res, type));
        } else {
          service(name).stopContainer(new ContainerTerminationContext(user, id, res, type));
        }
        return ok.bytes();
      }
      case OP_STOP: {
        String name = r.str();
        r.end();
        AuxiliaryService s = services.remove(name);
        if (s != null) {
          s.stop();
        }
        return ok.bytes();
      }
      default:
        throw new BadFrame("unknown request " + op);
    }
  }

  /** Hadoop's AuxServices.initAuxService for one service. */
  private void init(String name, String className, String classpath, String systemClasses,
      String recoveryPath, Map<String, String> props) throws Exception {
    AuxiliaryService s;
    if (!classpath.isEmpty()) {
      String[] sys = systemClasses.isEmpty() ? new String[0] : StringUtils.split(systemClasses);
      s = Isolated.create(conf, className, classpath, sys);
    } else {
      Class<?> c;
      try {
        c = Class.forName(className, true, AuxHost.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        throw new ClassNotFoundException("Class " + className + " not found", e);
      }
      s = ReflectionUtils.newInstance(c.asSubclass(AuxiliaryService.class), null);
    }
    if (!name.equals(s.getName())) {
      System.err.println("aux-host: The Auxiliary Service named '" + name + "' in the "
          + "configuration is for " + s.getClass() + " which has a name of '" + s.getName()
          + "'.");
    }
    s.setAuxiliaryLocalPathHandler(new LocalPaths(conf));
    if (!recoveryPath.isEmpty()) {
      s.setRecoveryPath(new Path(recoveryPath));
    }
    Configuration custom = new Configuration(conf);
    for (Map.Entry<String, String> e : props.entrySet()) {
      custom.set(e.getKey(), e.getValue());
    }
    s.init(custom);
    services.put(name, s);
    System.err.println("aux-host: Initialized auxiliary service " + name);
  }

  void stopAll() {
    List<String> names = new ArrayList<>(services.keySet());
    for (String n : names) {
      try {
        services.remove(n).stop();
      } catch (Throwable t) {
        System.err.println("aux-host: stopping " + n + " failed: " + t);
      }
    }
  }

  /** The node's local dirs, as the NodeManager's LocalDirsHandlerService hands them out. */
  static final class LocalPaths implements AuxiliaryLocalPathHandler {
    private final Configuration conf;
    private final LocalDirAllocator alloc = new LocalDirAllocator("yarn.nodemanager.local-dirs");

    LocalPaths(Configuration conf) {
      this.conf = conf;
    }

    @Override
    public Path getLocalPathForRead(String path) throws IOException {
      return alloc.getLocalPathToRead(path, conf);
    }

    @Override
    public Path getLocalPathForWrite(String path) throws IOException {
      return alloc.getLocalPathForWrite(path, conf);
    }

    @Override
    public Path getLocalPathForWrite(String path, long size) throws IOException {
      return alloc.getLocalPathForWrite(path, size, conf);
    }

    @Override
    public Iterable<Path> getAllLocalPathsForRead(String path) throws IOException {
      return alloc.getAllLocalPathsToRead(path, conf);
    }
  }

  /**
   * A service loaded by an ApplicationClassLoader of its own, every callback run with that loader
   * as the thread's context class loader: Hadoop 3.3.4's AuxiliaryServiceWithCustomClassLoader
   * (package-private there, so written again here).
   */
  static final class Isolated extends AuxiliaryService {
    private final AuxiliaryService wrapped;
    private final ClassLoader loader;

    private Isolated(String name, AuxiliaryService wrapped, ClassLoader loader) {
      super(name);
      this.wrapped = wrapped;
      this.loader = loader;
    }

    static Isolated create(Configuration conf, String className, String classpath,
        String[] systemClasses) throws Exception {
      ClassLoader loader = new ApplicationClassLoader(classpath, AuxHost.class.getClassLoader(),
          java.util.Arrays.asList(systemClasses));
      Class<?> c;
      try {
        c = Class.forName(className, true, loader);
      } catch (ClassNotFoundException e) {
        throw new ClassNotFoundException(
            "Class " + className + " not found in the class path " + classpath, e);
      }
      AuxiliaryService wrapped = ReflectionUtils.newInstance(
          c.asSubclass(AuxiliaryService.class), conf);
      return new Isolated(className + " with custom class loader", wrapped, loader);
    }

    private interface Call {
      void run() throws Exception;
    }

    private void in(Call call) {
      ClassLoader original = Thread.currentThread().getContextClassLoader();
      Thread.currentThread().setContextClassLoader(loader);
      try {
        call.run();
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new RuntimeException(e);
      } finally {
        Thread.currentThread().setContextClassLoader(original);
      }
    }

    @Override
    protected void serviceInit(Configuration c) throws Exception {
      Configuration config = new Configuration(c);
      setConfig(config);
      config.setClassLoader(loader);
      in(() -> wrapped.init(config));
    }

    @Override
    protected void serviceStart() throws Exception {
      in(wrapped::start);
    }

    @Override
    protected void serviceStop() throws Exception {
      in(wrapped::stop);
    }

    @Override
    public void initializeApplication(ApplicationInitializationContext ctx) {
      in(() -> wrapped.initializeApplication(ctx));
    }

    @Override
    public void stopApplication(ApplicationTerminationContext ctx) {
      in(() -> wrapped.stopApplication(ctx));
    }

    @Override
    public ByteBuffer getMetaData() {
      ByteBuffer[] out = new ByteBuffer[1];
      in(() -> out[0] = wrapped.getMetaData());
      return out[0];
    }

    @Override
    public void initializeContainer(ContainerInitializationContext ctx) {
      in(() -> wrapped.initializeContainer(ctx));
    }

    @Override
    public void stopContainer(ContainerTerminationContext ctx) {
      in(() -> wrapped.stopContainer(ctx));
    }

    @Override
    public void setRecoveryPath(Path recoveryPath) {
      in(() -> wrapped.setRecoveryPath(recoveryPath));
    }

    @Override
    public void setAuxiliaryLocalPathHandler(AuxiliaryLocalPathHandler handler) {
      super.setAuxiliaryLocalPathHandler(handler);
      in(() -> wrapped.setAuxiliaryLocalPathHandler(handler));
    }
  }

  static final class BadFrame extends Exception {
    BadFrame(String m) {
      super(m);
    }
  }

  /** The fields of one frame; every length is checked against what is left. */
  static final class Reader {
    private final ByteBuffer b;

    Reader(byte[] frame) {
      b = ByteBuffer.wrap(frame);
    }

    private void need(int n, String what) throws BadFrame {
      if (n < 0 || b.remaining() < n) {
        throw new BadFrame(what + " needs " + n + " bytes, " + b.remaining() + " left");
      }
    }

    int u8() throws BadFrame {
      need(1, "a byte");
      return b.get() & 0xff;
    }

    int i32() throws BadFrame {
      need(4, "an int");
      return b.getInt();
    }

    long i64() throws BadFrame {
      need(8, "a long");
      return b.getLong();
    }

    byte[] bytes() throws BadFrame {
      int n = i32();
      need(n, "a byte string");
      byte[] out = new byte[n];
      b.get(out);
      return out;
    }

    String str() throws BadFrame {
      return new String(bytes(), StandardCharsets.UTF_8);
    }

    Map<String, String> pairs() throws BadFrame {
      int n = i32();
      if (n < 0 || n > b.remaining() / 8) {
        throw new BadFrame("a list of " + n + " pairs");
      }
      Map<String, String> m = new LinkedHashMap<>();
      for (int i = 0; i < n; i++) {
        m.put(str(), str());
      }
      return m;
    }

    void end() throws BadFrame {
      if (b.hasRemaining()) {
        throw new BadFrame(b.remaining() + " bytes after the last field");
      }
    }
  }

  static final class Writer {
    private final ByteArrayOutputStream buf = new ByteArrayOutputStream();
    private final DataOutputStream out = new DataOutputStream(buf);

    Writer(int first) throws IOException {
      out.writeByte(first);
    }

    void u8(int v) throws IOException {
      out.writeByte(v);
    }

    void bytes(byte[] v) throws IOException {
      out.writeInt(v.length);
      out.write(v);
    }

    void str(String s) throws IOException {
      bytes(s.getBytes(StandardCharsets.UTF_8));
    }

    byte[] bytes() throws IOException {
      out.flush();
      byte[] b = buf.toByteArray();
      if (b.length > MAX_FRAME) {
        Writer w = new Writer(1);
        w.str("the reply of " + b.length + " bytes is over the frame limit");
        return w.bytes();
      }
      return b;
    }
  }
}
