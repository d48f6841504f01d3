// Prints the protobuf schema compiled into the Hadoop client jars, one normalized line
// per element, so a test can compare it with Spindle's own .proto files.
//
// Usage: DumpDescriptors [OUTER_CLASS...]
//   With no arguments, dumps the YARN and Hadoop-common files Spindle speaks. Classes that
//   are not on the classpath are reported on stderr and skipped; the files each loaded
//   file imports are dumped too.
//
// Output (stdout), one line per element, "<proto file>\t<element line>", sorted:
//   message <full message name>
//   field <full message name>.<field> <number> <label> <type> <type name or -> [default=<v>]
//     (a default is printed only when it differs from the implicit one: zero, false, "",
//     the enum's first value; string and bytes defaults are printed in double quotes)
//   enum <full enum name>
//   value <full enum name>.<VALUE> <number>
//   service <full service name>
//   rpc <full service name>.<method> <input type> <output type>
// Labels are optional|required|repeated, types the descriptor.proto names without the
// TYPE_ prefix in lower case (int32, message, enum, ...), type names without a leading dot.

import java.lang.reflect.Method;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

import org.apache.hadoop.thirdparty.protobuf.DescriptorProtos.FieldDescriptorProto;
import org.apache.hadoop.thirdparty.protobuf.Descriptors.Descriptor;
import org.apache.hadoop.thirdparty.protobuf.Descriptors.EnumDescriptor;
import org.apache.hadoop.thirdparty.protobuf.Descriptors.EnumValueDescriptor;
import org.apache.hadoop.thirdparty.protobuf.Descriptors.FieldDescriptor;
import org.apache.hadoop.thirdparty.protobuf.Descriptors.FileDescriptor;
import org.apache.hadoop.thirdparty.protobuf.Descriptors.MethodDescriptor;
import org.apache.hadoop.thirdparty.protobuf.Descriptors.ServiceDescriptor;

public final class DumpDescriptors {
    private static final List<String> DEFAULT_CLASSES = Arrays.asList(
            "org.apache.hadoop.yarn.proto.YarnProtos",
            "org.apache.hadoop.yarn.proto.YarnServiceProtos",
            "org.apache.hadoop.yarn.proto.ApplicationClientProtocol",
            "org.apache.hadoop.yarn.proto.ApplicationMasterProtocol",
            "org.apache.hadoop.yarn.proto.ContainerManagementProtocol",
            "org.apache.hadoop.yarn.proto.ResourceManagerAdministrationProtocol",
            "org.apache.hadoop.yarn.proto.YarnServerResourceManagerServiceProtos",
            "org.apache.hadoop.yarn.proto.YarnSecurityTokenProtos",
            "org.apache.hadoop.yarn.proto.YarnServerCommonProtos",
            "org.apache.hadoop.yarn.proto.YarnServerCommonServiceProtos",
            "org.apache.hadoop.yarn.proto.ResourceTracker",
            "org.apache.hadoop.ipc.protobuf.RpcHeaderProtos",
            "org.apache.hadoop.ipc.protobuf.IpcConnectionContextProtos",
            "org.apache.hadoop.ipc.protobuf.ProtobufRpcEngine2Protos",
            "org.apache.hadoop.security.proto.SecurityProtos");

    private DumpDescriptors() {}

    public static void main(String[] args) throws Exception {
        List<String> classes = args.length > 0 ? Arrays.asList(args) : DEFAULT_CLASSES;
        Map<String, FileDescriptor> files = new LinkedHashMap<>();
        Deque<FileDescriptor> pending = new ArrayDeque<>();
        int loaded = 0;
        for (String name : classes) {
            Class<?> outer;
            try {
                outer = Class.forName(name);
            } catch (ClassNotFoundException e) {
                System.err.println("DumpDescriptors: " + name + " is not on the classpath, skipped");
                continue;
            }
            Method getter = outer.getMethod("getDescriptor");
            pending.add((FileDescriptor) getter.invoke(null));
            loaded++;
        }
        if (loaded == 0) {
            System.err.println("DumpDescriptors: none of the requested classes could be loaded");
            System.exit(2);
        }
        while (!pending.isEmpty()) {
            FileDescriptor file = pending.poll();
            if (files.putIfAbsent(file.getName(), file) == null) {
                pending.addAll(file.getDependencies());
            }
        }

        TreeSet<String> lines = new TreeSet<>();
        for (FileDescriptor file : files.values()) {
            List<String> out = new ArrayList<>();
            for (Descriptor message : file.getMessageTypes()) {
                dumpMessage(message, out);
            }
            for (EnumDescriptor e : file.getEnumTypes()) {
                dumpEnum(e, out);
            }
            for (ServiceDescriptor service : file.getServices()) {
                out.add("service " + service.getFullName());
                for (MethodDescriptor m : service.getMethods()) {
                    out.add("rpc " + m.getFullName() + " " + m.getInputType().getFullName() + " "
                            + m.getOutputType().getFullName());
                }
            }
            for (String line : out) {
                lines.add(file.getName() + "\t" + line);
            }
            System.err.println("DumpDescriptors: " + file.getName() + " (" + out.size() + " lines)");
        }
        StringBuilder sb = new StringBuilder();
        for (String line : lines) {
            sb.append(line).append('\n');
        }
        System.out.print(sb);
        System.out.flush();
    }

    private static void dumpMessage(Descriptor message, List<String> out) {
        out.add("message " + message.getFullName());
        for (FieldDescriptor field : message.getFields()) {
            // toProto() is the field exactly as protoc recorded it (label, declared default).
            FieldDescriptorProto proto = field.toProto();
            StringBuilder line = new StringBuilder("field ")
                    .append(field.getFullName()).append(' ')
                    .append(field.getNumber()).append(' ')
                    .append(label(proto.getLabel())).append(' ')
                    .append(type(proto.getType())).append(' ');
            switch (field.getJavaType()) {
                case MESSAGE:
                    line.append(field.getMessageType().getFullName());
                    break;
                case ENUM:
                    line.append(field.getEnumType().getFullName());
                    break;
                default:
                    line.append('-');
            }
            if (proto.hasDefaultValue() && !isImplicitDefault(field, proto.getDefaultValue())) {
                line.append(" default=");
                if (proto.getType() == FieldDescriptorProto.Type.TYPE_STRING
                        || proto.getType() == FieldDescriptorProto.Type.TYPE_BYTES) {
                    line.append('"').append(proto.getDefaultValue()).append('"');
                } else {
                    line.append(proto.getDefaultValue());
                }
            }
            out.add(line.toString());
        }
        for (Descriptor nested : message.getNestedTypes()) {
            dumpMessage(nested, out);
        }
        for (EnumDescriptor e : message.getEnumTypes()) {
            dumpEnum(e, out);
        }
    }

    /**
     * True when a declared default is the one proto2 implies anyway (zero, false, the empty
     * string, the enum's first value), so writing it or not makes no difference.
     */
    private static boolean isImplicitDefault(FieldDescriptor field, String value) {
        switch (field.getJavaType()) {
            case BOOLEAN:
                return value.equals("false");
            case STRING:
            case BYTE_STRING:
                return value.isEmpty();
            case ENUM:
                return value.equals(field.getEnumType().getValues().get(0).getName());
            case INT:
            case LONG:
                return value.equals("0") || value.equals("-0");
            case FLOAT:
            case DOUBLE:
                try {
                    return Double.parseDouble(value) == 0.0;
                } catch (NumberFormatException e) {
                    return false;
                }
            default:
                return false;
        }
    }

    private static void dumpEnum(EnumDescriptor e, List<String> out) {
        out.add("enum " + e.getFullName());
        for (EnumValueDescriptor v : e.getValues()) {
            // EnumValueDescriptor.getFullName() drops the enum's own name (values are
            // siblings of their enum in protobuf scoping); spell it out instead.
            out.add("value " + e.getFullName() + "." + v.getName() + " " + v.getNumber());
        }
    }

    private static String label(FieldDescriptorProto.Label label) {
        switch (label) {
            case LABEL_REQUIRED:
                return "required";
            case LABEL_REPEATED:
                return "repeated";
            default:
                return "optional";
        }
    }

    private static String type(FieldDescriptorProto.Type type) {
        return type.name().substring("TYPE_".length()).toLowerCase(Locale.ROOT);
    }
}
