// Hadoop 3.3.4's own MapReduce classes against Spindle's native mapreduce_shuffle, for
// integration/tests/shuffle_wire.rs. Run with the jars of integration/setup-maven.sh mapreduce.
//
//   ShuffleProbe setup LOCAL_DIR USER APP_ID MAPS REDUCES BIG_RECORDS
//       Writes each map's output as a map task does (IFile.Writer per partition into file.out,
//       SpillRecord with its CRC into file.out.index) under
//       LOCAL_DIR/usercache/USER/appcache/APP_ID/output/<attempt>/, and the job token as the
//       MR AM hands it to the NodeManager (ShuffleHandler.serializeServiceData) into
//       LOCAL_DIR/APP_ID.token. Map 0's partition 0 holds BIG_RECORDS records of 1000 bytes.
//
//   ShuffleProbe check OUR_PORT LOCAL_DIR USER APP_A APP_B MAPS REDUCES BIG_RECORDS
//       Starts Hadoop's own ShuffleHandler on the same local dir with both jobs' tokens, then
//       fetches from both servers as Hadoop's Fetcher does (UrlHash from SecureShuffleUtils
//       and the JobTokenSecretManager key, ReplyHash checked with verifyReply, each output
//       read with ShuffleHeader.readFields and IFile.Reader) and compares: the bodies byte for
//       byte, the refusal codes of forged, foreign, malformed and non-GET requests, keep-alive
//       headers, a forged request while a good transfer is under way, and a reducer that
//       disconnects mid-body. Prints one line per check; exits 1 on the first failure.
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.Socket;
import java.net.URL;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import javax.crypto.SecretKey;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalDirAllocator;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.DataInputBuffer;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.IFile;
import org.apache.hadoop.mapred.IndexRecord;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.JobID;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.mapred.SpillRecord;
import org.apache.hadoop.mapred.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.security.SecureShuffleUtils;
import org.apache.hadoop.mapreduce.security.token.JobTokenIdentifier;
import org.apache.hadoop.mapreduce.security.token.JobTokenSecretManager;
import org.apache.hadoop.mapreduce.task.reduce.ShuffleHeader;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;

public class ShuffleProbe {
  static final int TIMEOUT_MS = 120_000;

  public static void main(String[] args) throws Exception {
    if (args.length == 7 && args[0].equals("setup")) {
      setup(args[1], args[2], ApplicationId.fromString(args[3]), Integer.parseInt(args[4]),
          Integer.parseInt(args[5]), Integer.parseInt(args[6]));
    } else if (args.length == 9 && args[0].equals("check")) {
      check(Integer.parseInt(args[1]), args[2], args[3], ApplicationId.fromString(args[4]),
          ApplicationId.fromString(args[5]), Integer.parseInt(args[6]),
          Integer.parseInt(args[7]), Integer.parseInt(args[8]));
    } else {
      System.err.println("usage: ShuffleProbe setup|check ... (see the source)");
      System.exit(2);
    }
  }

  static JobID jobOf(ApplicationId app) {
    // As ShuffleHandler.initializeApplication derives it.
    return new JobID(Long.toString(app.getClusterTimestamp()), app.getId());
  }

  static String mapAttempt(ApplicationId app, int map) {
    return new TaskAttemptID(new org.apache.hadoop.mapred.TaskID(jobOf(app), TaskType.MAP, map), 0)
        .toString();
  }

  static int records(int map, int reduce, int reduces, int maps, int big) {
    if (map == 0 && reduce == 0) {
      return big;
    }
    if (map == maps - 1 && reduce == reduces - 1) {
      return 0;
    }
    return (map + 1) * (reduce + 1) * 3;
  }

  static Text value(int map, int reduce, int i, int len) {
    StringBuilder sb = new StringBuilder(len);
    for (int k = 0; k < len; k++) {
      sb.append((char) ('a' + (map * 7 + reduce * 13 + i + k) % 26));
    }
    return new Text(sb.toString());
  }

  static void setup(String localDir, String user, ApplicationId app, int maps, int reduces,
      int big) throws Exception {
    JobConf job = new JobConf();
    FileSystem rfs = FileSystem.getLocal(job).getRaw();
    for (int m = 0; m < maps; m++) {
      String attempt = mapAttempt(app, m);
      Path dir = new Path(localDir, "usercache/" + user + "/appcache/" + app + "/output/" + attempt);
      rfs.mkdirs(dir);
      SpillRecord spill = new SpillRecord(reduces);
      try (FSDataOutputStream out = rfs.create(new Path(dir, "file.out"))) {
        for (int r = 0; r < reduces; r++) {
          long start = out.getPos();
          IFile.Writer<Text, Text> w =
              new IFile.Writer<Text, Text>(job, out, Text.class, Text.class, null, null);
          int n = records(m, r, reduces, maps, big);
          for (int i = 0; i < n; i++) {
            int len = (m == 0 && r == 0) ? 1000 : 10 + i % 50;
            w.append(new Text("key-" + m + "-" + r + "-" + i), value(m, r, i, len));
          }
          w.close();
          // As MapTask.sortAndSpill records a partition.
          spill.putIndex(new IndexRecord(start, w.getRawLength(), w.getCompressedLength()), r);
        }
      }
      spill.writeToFile(new Path(dir, "file.out.index"), job);
      System.out.println(attempt);
    }
    // The job token as the MR client makes it and the AM passes it as service data.
    JobTokenSecretManager sm = new JobTokenSecretManager();
    Token<JobTokenIdentifier> token =
        new Token<JobTokenIdentifier>(new JobTokenIdentifier(new Text(jobOf(app).toString())), sm);
    ByteBuffer data = ShuffleHandler.serializeServiceData(token);
    byte[] bytes = new byte[data.remaining()];
    data.get(bytes);
    Files.write(new File(localDir, app + ".token").toPath(), bytes);
  }

  static Token<JobTokenIdentifier> readToken(String localDir, ApplicationId app)
      throws IOException {
    byte[] bytes = Files.readAllBytes(new File(localDir, app + ".token").toPath());
    Token<JobTokenIdentifier> token = new Token<JobTokenIdentifier>();
    token.readFields(new DataInputStream(new java.io.ByteArrayInputStream(bytes)));
    return token;
  }

  // ---------------------------------------------------------------------------------------

  static void pass(String what) {
    System.out.println("PASS " + what);
  }

  static void fail(String what) {
    System.out.println("FAIL " + what);
    System.out.flush();
    System.exit(1);
  }

  static void expect(boolean ok, String what) {
    if (ok) {
      pass(what);
    } else {
      fail(what);
    }
  }

  /** One fetch as Fetcher.copyFromHost does it, with what came back. */
  static class Fetch {
    int code;
    String replyHash;
    String connection;
    String keepAlive;
    String contentLength;
    String name;
    String version;
    byte[] body;
    String error;
  }

  static URL url(int port, JobID job, int reduce, List<String> maps, String extra)
      throws IOException {
    return new URL("http://127.0.0.1:" + port + "/mapOutput?job=" + job + "&reduce=" + reduce
        + "&map=" + String.join(",", maps) + extra);
  }

  static HttpURLConnection open(URL url, SecretKey key, String method, boolean versionOk)
      throws IOException {
    HttpURLConnection conn = (HttpURLConnection) url.openConnection();
    conn.setConnectTimeout(TIMEOUT_MS);
    conn.setReadTimeout(TIMEOUT_MS);
    conn.setRequestMethod(method);
    if (key != null) {
      String msgToEncode = SecureShuffleUtils.buildMsgFrom(url);
      String encHash = SecureShuffleUtils.hashFromString(msgToEncode, key);
      conn.addRequestProperty(SecureShuffleUtils.HTTP_HEADER_URL_HASH, encHash);
    }
    conn.addRequestProperty(ShuffleHeader.HTTP_HEADER_NAME, ShuffleHeader.DEFAULT_HTTP_HEADER_NAME);
    conn.addRequestProperty(ShuffleHeader.HTTP_HEADER_VERSION,
        versionOk ? ShuffleHeader.DEFAULT_HTTP_HEADER_VERSION : "0.9.9");
    return conn;
  }

  static Fetch fetch(URL url, SecretKey key, String method, boolean versionOk) throws IOException {
    HttpURLConnection conn = open(url, key, method, versionOk);
    Fetch f = new Fetch();
    try {
      conn.connect();
      f.code = conn.getResponseCode();
      f.replyHash = conn.getHeaderField(SecureShuffleUtils.HTTP_HEADER_REPLY_URL_HASH);
      f.connection = conn.getHeaderField("Connection");
      f.keepAlive = conn.getHeaderField("Keep-Alive");
      f.contentLength = conn.getHeaderField("Content-Length");
      f.name = conn.getHeaderField(ShuffleHeader.HTTP_HEADER_NAME);
      f.version = conn.getHeaderField(ShuffleHeader.HTTP_HEADER_VERSION);
      InputStream in = f.code == 200 ? conn.getInputStream() : conn.getErrorStream();
      f.body = in == null ? new byte[0] : readAll(in);
      if (f.code == 200 && key != null) {
        // Fetcher.verifyConnection.
        String encHash = SecureShuffleUtils.hashFromString(SecureShuffleUtils.buildMsgFrom(url), key);
        if (f.replyHash == null) {
          throw new IOException("security validation of TT Map output failed");
        }
        SecureShuffleUtils.verifyReply(f.replyHash, encHash, key);
      }
    } catch (IOException e) {
      f.error = e.toString();
    } finally {
      conn.disconnect();
    }
    return f;
  }

  static byte[] readAll(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[65536];
    int n;
    while ((n = in.read(buf)) > 0) {
      out.write(buf, 0, n);
    }
    in.close();
    return out.toByteArray();
  }

  /**
   * Reads a body as Fetcher.copyMapOutput does and checks each output against the index
   * (through Hadoop's SpillRecord) and as an IFile segment (through IFile.Reader).
   */
  static void checkBody(String who, byte[] body, String localDir, String user, ApplicationId app,
      int reduce, List<String> maps, int expectRecords[]) throws IOException {
    JobConf job = new JobConf();
    FileSystem rfs = FileSystem.getLocal(job).getRaw();
    DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(body));
    for (int i = 0; i < maps.size(); i++) {
      ShuffleHeader h = new ShuffleHeader();
      h.readFields(in);
      Path dir = new Path(localDir, "usercache/" + user + "/appcache/" + app + "/output/" + maps.get(i));
      IndexRecord rec = new SpillRecord(new Path(dir, "file.out.index"), job).getIndex(reduce);
      // ShuffleHeader's fields are package-private: compare through its own write().
      ShuffleHeader want = new ShuffleHeader(maps.get(i), rec.partLength, rec.rawLength, reduce);
      if (!Arrays.equals(writableBytes(h), writableBytes(want))) {
        fail(who + ": header of " + maps.get(i) + " differs from the index");
      }
      TaskAttemptID.forName(maps.get(i));
      byte[] part = new byte[(int) rec.partLength];
      in.readFully(part);
      byte[] onDisk = new byte[(int) rec.partLength];
      try (java.io.RandomAccessFile raf =
          new java.io.RandomAccessFile(new File(dir.toString(), "file.out"), "r")) {
        raf.seek(rec.startOffset);
        raf.readFully(onDisk);
      }
      if (!Arrays.equals(part, onDisk)) {
        fail(who + ": bytes of " + maps.get(i) + " reduce " + reduce + " differ from file.out");
      }
      // The segment reads back as IFile records with a good checksum.
      File tmp = File.createTempFile("segment", ".ifile");
      try {
        Files.write(tmp.toPath(), part);
        IFile.Reader<Text, Text> reader = new IFile.Reader<Text, Text>(job,
            rfs.open(new Path(tmp.getAbsolutePath())), part.length, null, null);
        DataInputBuffer k = new DataInputBuffer();
        DataInputBuffer v = new DataInputBuffer();
        int n = 0;
        while (reader.nextRawKey(k)) {
          reader.nextRawValue(v);
          n++;
        }
        reader.close();
        if (n != expectRecords[i]) {
          fail(who + ": " + maps.get(i) + " reduce " + reduce + " has " + n + " records, not "
              + expectRecords[i]);
        }
      } finally {
        tmp.delete();
      }
    }
    if (in.read() != -1) {
      fail(who + ": bytes after the last map output");
    }
  }

  static byte[] writableBytes(ShuffleHeader h) throws IOException {
    org.apache.hadoop.io.DataOutputBuffer out = new org.apache.hadoop.io.DataOutputBuffer();
    h.write(out);
    return Arrays.copyOf(out.getData(), out.getLength());
  }

  static ShuffleHandler startJavaShuffle(String localDir, String user, ApplicationId[] apps)
      throws Exception {
    Configuration conf = new Configuration();
    conf.setInt(ShuffleHandler.SHUFFLE_PORT_CONFIG_KEY, 0);
    conf.set(YarnConfiguration.NM_LOCAL_DIRS, localDir);
    final Configuration lconf = conf;
    final LocalDirAllocator dirs = new LocalDirAllocator(YarnConfiguration.NM_LOCAL_DIRS);
    ShuffleHandler sh = new ShuffleHandler();
    // What the NodeManager hands its auxiliary services.
    sh.setAuxiliaryLocalPathHandler(new AuxiliaryLocalPathHandler() {
      public Path getLocalPathForRead(String path) throws IOException {
        return dirs.getLocalPathToRead(path, lconf);
      }
      public Path getLocalPathForWrite(String path) throws IOException {
        return dirs.getLocalPathForWrite(path, lconf);
      }
      public Path getLocalPathForWrite(String path, long size) throws IOException {
        return dirs.getLocalPathForWrite(path, size, lconf);
      }
      public Iterable<Path> getAllLocalPathsForRead(String path) throws IOException {
        return dirs.getAllLocalPathsToRead(path, lconf);
      }
    });
    sh.init(conf);
    sh.start();
    for (ApplicationId app : apps) {
      byte[] bytes = Files.readAllBytes(new File(localDir, app + ".token").toPath());
      sh.initializeApplication(
          new ApplicationInitializationContext(user, app, ByteBuffer.wrap(bytes)));
    }
    return sh;
  }

  static void check(int ourPort, String localDir, String user, ApplicationId appA,
      ApplicationId appB, int nMaps, int reduces, int big) throws Exception {
    ShuffleHandler javaShuffle = startJavaShuffle(localDir, user, new ApplicationId[] {appA, appB});
    int javaPort = ShuffleHandler.deserializeMetaData(javaShuffle.getMetaData());
    System.out.println("java ShuffleHandler on port " + javaPort);
    SecretKey keyA = JobTokenSecretManager.createSecretKey(readToken(localDir, appA).getPassword());
    SecretKey keyB = JobTokenSecretManager.createSecretKey(readToken(localDir, appB).getPassword());
    JobID jobA = jobOf(appA);
    JobID jobB = jobOf(appB);
    List<String> maps = new ArrayList<String>();
    for (int m = 0; m < nMaps; m++) {
      maps.add(mapAttempt(appA, m));
    }

    // 1. Every partition of every map, from both servers: same bytes, valid framing.
    for (int r = 0; r < reduces; r++) {
      Fetch ours = fetch(url(ourPort, jobA, r, maps, ""), keyA, "GET", true);
      Fetch theirs = fetch(url(javaPort, jobA, r, maps, ""), keyA, "GET", true);
      expect(ours.code == 200 && ours.error == null,
          "spindle serves reduce " + r + " (" + ours.code + " " + ours.error + ")");
      expect(theirs.code == 200 && theirs.error == null, "java serves reduce " + r);
      expect(Arrays.equals(ours.body, theirs.body),
          "reduce " + r + ": spindle's body equals java's (" + ours.body.length + " bytes)");
      expect("mapreduce".equals(ours.name) && "1.0.0".equals(ours.version),
          "reduce " + r + ": name/version headers");
      expect(eq(ours.connection, theirs.connection) && eq(ours.keepAlive, theirs.keepAlive),
          "reduce " + r + ": Connection '" + ours.connection + "' as java's");
      int[] counts = new int[nMaps];
      for (int m = 0; m < nMaps; m++) {
        counts[m] = records(m, r, reduces, nMaps, big);
      }
      checkBody("spindle reduce " + r, ours.body, localDir, user, appA, r, maps, counts);
      pass("reduce " + r + ": ShuffleHeader.readFields + IFile.Reader read spindle's outputs");
    }

    // 2. keepAlive=true: Content-Length and Keep-Alive headers as java's.
    {
      List<String> two = maps.subList(1, Math.min(3, maps.size()));
      Fetch ours = fetch(url(ourPort, jobA, 1, two, "&keepAlive=true"), keyA, "GET", true);
      Fetch theirs = fetch(url(javaPort, jobA, 1, two, "&keepAlive=true"), keyA, "GET", true);
      expect(ours.code == 200 && Arrays.equals(ours.body, theirs.body), "keep-alive body");
      expect(eq(ours.contentLength, theirs.contentLength) && ours.contentLength != null,
          "keep-alive Content-Length " + ours.contentLength + " as java's");
      expect(eq(ours.keepAlive, theirs.keepAlive) && eq(ours.connection, theirs.connection),
          "keep-alive headers '" + ours.connection + "', '" + ours.keepAlive + "' as java's");
    }

    // 3. Refusals: same codes as java's ShuffleHandler.
    List<String> one = maps.subList(1, 2);
    refusal("forged hash (job B's key)", url(ourPort, jobA, 0, one, ""),
        url(javaPort, jobA, 0, one, ""), keyB, "GET", true);
    refusal("unknown job", url(ourPort, JobID.forName("job_1_0042"), 0, one, ""),
        url(javaPort, JobID.forName("job_1_0042"), 0, one, ""), keyA, "GET", true);
    refusal("no UrlHash", url(ourPort, jobA, 0, one, ""), url(javaPort, jobA, 0, one, ""), null,
        "GET", true);
    refusal("old shuffle version", url(ourPort, jobA, 0, one, ""),
        url(javaPort, jobA, 0, one, ""), keyA, "GET", false);
    refusal("POST", url(ourPort, jobA, 0, one, ""), url(javaPort, jobA, 0, one, ""), keyA, "POST",
        true);
    refusal("no map parameter", new URL("http://127.0.0.1:" + ourPort + "/mapOutput?job=" + jobA
        + "&reduce=0"), new URL("http://127.0.0.1:" + javaPort + "/mapOutput?job=" + jobA
        + "&reduce=0"), keyA, "GET", true);
    refusal("bad reduce", new URL("http://127.0.0.1:" + ourPort + "/mapOutput?job=" + jobA
        + "&reduce=x&map=" + one.get(0)), new URL("http://127.0.0.1:" + javaPort
        + "/mapOutput?job=" + jobA + "&reduce=x&map=" + one.get(0)), keyA, "GET", true);

    refusal("two job parameters", new URL("http://127.0.0.1:" + ourPort + "/mapOutput?job=" + jobA
        + "&job=" + jobB + "&reduce=0&map=" + one.get(0)), new URL("http://127.0.0.1:" + javaPort
        + "/mapOutput?job=" + jobA + "&job=" + jobB + "&reduce=0&map=" + one.get(0)), keyA, "GET",
        true);
    refusal("bad escape in the query", new URL("http://127.0.0.1:" + ourPort
        + "/mapOutput?job=" + jobA + "&reduce=0&map=%zz"), new URL("http://127.0.0.1:"
        + javaPort + "/mapOutput?job=" + jobA + "&reduce=0&map=%zz"), keyA, "GET", true);

    // 4. Job B's token asking, under job B, for job A's map: spindle refuses with 500; java's
    //    handler (which answers a 200 head and then writes its 500 into the body) does not
    //    deliver it either.
    {
      List<String> foreign = Arrays.asList(mapAttempt(appB, 0), maps.get(1));
      Fetch ours = fetch(url(ourPort, jobB, 0, foreign, ""), keyB, "GET", true);
      Fetch theirs = fetch(url(javaPort, jobB, 0, foreign, ""), keyB, "GET", true);
      expect(ours.code == 500, "foreign map: spindle answers " + ours.code);
      boolean javaDelivered = theirs.code == 200 && theirs.error == null
          && delivers(theirs.body, maps.get(1));
      expect(!javaDelivered, "foreign map: java (" + theirs.code + ") does not deliver it either");
      // Job B's own map through job B's token is fine.
      Fetch own = fetch(url(ourPort, jobB, 0, foreign.subList(0, 1), ""), keyB, "GET", true);
      expect(own.code == 200 && own.error == null, "job B's own map is served");
    }

    // 5. A forged request while a good transfer is under way on another connection.
    {
      URL good = url(ourPort, jobA, 0, maps.subList(0, 1), "");
      HttpURLConnection conn = open(good, keyA, "GET", true);
      conn.connect();
      expect(conn.getResponseCode() == 200, "slow transfer started");
      InputStream in = conn.getInputStream();
      byte[] first = new byte[4096];
      new DataInputStream(in).readFully(first);
      Fetch forged = fetch(url(ourPort, jobA, 0, maps.subList(0, 1), ""), keyB, "GET", true);
      expect(forged.code == 401, "forged during a transfer: " + forged.code);
      byte[] rest = readAll(in);
      byte[] whole = new byte[first.length + rest.length];
      System.arraycopy(first, 0, whole, 0, first.length);
      System.arraycopy(rest, 0, whole, first.length, rest.length);
      String replyHash = conn.getHeaderField(SecureShuffleUtils.HTTP_HEADER_REPLY_URL_HASH);
      SecureShuffleUtils.verifyReply(replyHash,
          SecureShuffleUtils.hashFromString(SecureShuffleUtils.buildMsgFrom(good), keyA), keyA);
      checkBody("transfer beside a forgery", whole, localDir, user, appA, 0, maps.subList(0, 1),
          new int[] {big});
      pass("the transfer beside the forged request completed intact");
    }

    // 6. Reducers that disconnect mid-body, then a good fetch.
    for (int i = 0; i < 3; i++) {
      URL u = url(ourPort, jobA, 0, maps.subList(0, 1), "");
      String hash = SecureShuffleUtils.hashFromString(SecureShuffleUtils.buildMsgFrom(u), keyA);
      try (Socket s = new Socket("127.0.0.1", ourPort)) {
        OutputStream out = s.getOutputStream();
        out.write(("GET " + u.getFile() + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUrlHash: " + hash
            + "\r\nname: mapreduce\r\nversion: 1.0.0\r\n\r\n").getBytes("UTF-8"));
        out.flush();
        byte[] some = new byte[10000];
        new DataInputStream(s.getInputStream()).readFully(some);
        expect(new String(some, 0, 15, "UTF-8").startsWith("HTTP/1.1 200"),
            "abandoning reducer " + i + " got a 200 head");
      }
    }
    {
      Fetch after = fetch(url(ourPort, jobA, 0, maps, ""), keyA, "GET", true);
      Fetch theirs = fetch(url(javaPort, jobA, 0, maps, ""), keyA, "GET", true);
      expect(after.code == 200 && after.error == null && Arrays.equals(after.body, theirs.body),
          "after abandoned transfers a whole fetch succeeds");
    }

    javaShuffle.stop();
    System.out.println("ALL PASSED");
  }

  static boolean eq(String a, String b) {
    return a == null ? b == null : a.equalsIgnoreCase(b);
  }

  static boolean delivers(byte[] body, String map) {
    try {
      ShuffleHeader h = new ShuffleHeader();
      h.readFields(new DataInputStream(new java.io.ByteArrayInputStream(body)));
      ShuffleHeader want = new ShuffleHeader(map, 0, 0, 0);
      byte[] a = writableBytes(h);
      byte[] b = writableBytes(want);
      int idLen = map.length() + 1;
      return Arrays.equals(Arrays.copyOf(a, Math.min(idLen, a.length)), Arrays.copyOf(b, idLen));
    } catch (Exception e) {
      return false;
    }
  }

  static void refusal(String what, URL ours, URL theirs, SecretKey key, String method,
      boolean versionOk) throws IOException {
    Fetch o = fetch(ours, key, method, versionOk);
    Fetch t = fetch(theirs, key, method, versionOk);
    expect(o.code == t.code && o.code >= 400,
        what + ": spindle " + o.code + ", java " + t.code);
    expect(o.replyHash == null, what + ": no ReplyHash");
    String ob = new String(o.body, "UTF-8");
    String tb = new String(t.body, "UTF-8");
    // After a version refusal Hadoop's handler goes on writing into the closing connection,
    // so its body only starts with the message.
    expect(tb.equals(ob) || (!versionOk && tb.startsWith(ob) && !ob.isEmpty()),
        what + ": body '" + ob + "' as java's ('" + tb + "')");
    expect("mapreduce".equals(o.name) && "1.0.0".equals(o.version),
        what + ": name/version headers on the refusal");
  }
}
