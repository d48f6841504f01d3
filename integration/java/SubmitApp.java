// Submits one application through Hadoop's own YarnClient (the same path Spark and
// MapReduce clients take: getNewApplication, then submitApplication, then polling the
// report until the RM has accepted it) and prints the application id on stdout.
//
// Usage: SubmitApp --name NAME [--queue QUEUE] [--command CMD] [--memory-mb MB]
//                  [--vcores N] [--max-attempts N] [--type TYPE] [--public-file LINK=PATH]...
//                  [--private-file LINK=URI]... [--tokens FILE]
// The AM container runs CMD (default "sleep 1") through the NodeManager's launch script;
// each --public-file is a PUBLIC FILE resource of the local file PATH (its size and
// modification time as Hadoop's local FileSystem states them), linked as LINK; each
// --private-file a PRIVATE FILE resource of URI on its file system (an hdfs:// URL, or a
// path on fs.defaultFS), its size and modification time as that file system states them.
// --tokens FILE gives the AM container the credentials of FILE (Hadoop's token storage
// format), as MapReduce's and Spark's submitters give it their delegation tokens.
// Exit status 0 with the id on stdout on success; 1 with a message on stderr otherwise.

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.DataOutputBuffer;
import org.apache.hadoop.security.Credentials;
import java.nio.ByteBuffer;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.LocalResourceType;
import org.apache.hadoop.yarn.api.records.LocalResourceVisibility;
import org.apache.hadoop.yarn.api.records.URL;

import org.apache.hadoop.yarn.api.protocolrecords.GetNewApplicationResponse;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

public final class SubmitApp {
    private SubmitApp() {}

    private static final List<String> PUBLIC_FILES = new ArrayList<>();
    private static final List<String> PRIVATE_FILES = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parse(args);
        String name = opts.get("--name");
        if (name == null) {
            usage("--name is required");
        }
        String queue = opts.getOrDefault("--queue", "default");
        String command = opts.getOrDefault("--command", "sleep 1");
        int memoryMb = intOption(opts, "--memory-mb", 256);
        int vcores = intOption(opts, "--vcores", 1);
        int maxAttempts = intOption(opts, "--max-attempts", 1);
        String type = opts.getOrDefault("--type", "YARN");

        YarnConfiguration conf = new YarnConfiguration();
        Map<String, LocalResource> resources = new HashMap<>();
        FileSystem local = FileSystem.getLocal(conf);
        for (String spec : PUBLIC_FILES) {
            int eq = spec.indexOf('=');
            if (eq <= 0) {
                usage("--public-file needs LINK=PATH, got '" + spec + "'");
            }
            Path path = local.makeQualified(new Path(spec.substring(eq + 1)));
            FileStatus status = local.getFileStatus(path);
            resources.put(spec.substring(0, eq), LocalResource.newInstance(
                    URL.fromPath(path), LocalResourceType.FILE, LocalResourceVisibility.PUBLIC,
                    status.getLen(), status.getModificationTime()));
        }

        for (String spec : PRIVATE_FILES) {
            int eq = spec.indexOf('=');
            if (eq <= 0) {
                usage("--private-file needs LINK=URI, got '" + spec + "'");
            }
            Path path = new Path(spec.substring(eq + 1));
            FileSystem fs = path.getFileSystem(conf);
            Path qualified = fs.makeQualified(path);
            FileStatus status = fs.getFileStatus(qualified);
            resources.put(spec.substring(0, eq), LocalResource.newInstance(
                    URL.fromPath(qualified), LocalResourceType.FILE,
                    LocalResourceVisibility.PRIVATE,
                    status.getLen(), status.getModificationTime()));
        }

        YarnClient client = YarnClient.createYarnClient();
        client.init(conf);
        client.start();
        try {
            YarnClientApplication app = client.createApplication();
            GetNewApplicationResponse created = app.getNewApplicationResponse();
            Resource max = created.getMaximumResourceCapability();
            if (max == null) {
                System.err.println("SubmitApp: getNewApplication returned no maximumCapability");
                System.exit(1);
            }
            ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
            ctx.setApplicationName(name);
            ctx.setQueue(queue);
            ctx.setApplicationType(type);
            ctx.setMaxAppAttempts(maxAttempts);
            ctx.setResource(Resource.newInstance(memoryMb, vcores));
            ByteBuffer tokens = null;
            String tokenFile = opts.get("--tokens");
            if (tokenFile != null) {
                Credentials creds = Credentials.readTokenStorageFile(
                        new Path(new java.io.File(tokenFile).toURI()), conf);
                DataOutputBuffer dob = new DataOutputBuffer();
                creds.writeTokenStorageToStream(dob);
                tokens = ByteBuffer.wrap(dob.getData(), 0, dob.getLength());
            }
            ctx.setAMContainerSpec(ContainerLaunchContext.newInstance(
                    resources, Collections.emptyMap(),
                    Collections.singletonList(command), null, tokens, null));
            ApplicationId id = client.submitApplication(ctx);
            System.out.println(id);
        } finally {
            client.stop();
        }
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            String key = args[i];
            switch (key) {
                case "--name":
                case "--queue":
                case "--command":
                case "--memory-mb":
                case "--vcores":
                case "--max-attempts":
                case "--type":
                case "--tokens":
                    break;
                case "--public-file":
                    if (i + 1 >= args.length) {
                        usage(key + " needs a value");
                    }
                    PUBLIC_FILES.add(args[i + 1]);
                    continue;
                case "--private-file":
                    if (i + 1 >= args.length) {
                        usage(key + " needs a value");
                    }
                    PRIVATE_FILES.add(args[i + 1]);
                    continue;
                default:
                    usage("unknown option " + key);
            }
            if (i + 1 >= args.length) {
                usage(key + " needs a value");
            }
            opts.put(key, args[i + 1]);
        }
        return opts;
    }

    private static int intOption(Map<String, String> opts, String key, int fallback) {
        String value = opts.get(key);
        if (value == null) {
            return fallback;
        }
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            usage(key + " must be an integer, got '" + value + "'");
            return fallback;
        }
    }

    private static void usage(String problem) {
        System.err.println("SubmitApp: " + problem);
        System.err.println("usage: SubmitApp --name NAME [--queue QUEUE] [--command CMD]"
                + " [--memory-mb MB] [--vcores N] [--max-attempts N] [--type TYPE]"
                + " [--public-file LINK=PATH]... [--private-file LINK=URI]... [--tokens FILE]");
        System.exit(1);
    }
}
