// The ns-3 side of innet's simulator benchmark: a k-ary fat-tree with the same links as
// `innet bench sim` (hosts 100 Gbps, fabric 400 Gbps, 1 us per link), driven by the same htsim
// connection-matrix flow list, UDP (1000-byte payloads paced at the host line rate) or TCP
// (BulkSend, CUBIC, 1000-byte segments). Prints one JSON line.
//
// Differences from innet that do not change packet counts: ns-3 3.37's ECMP
// (Ipv4GlobalRouting::RandomEcmpRouting) picks a next hop per packet, not per flow; point-to-
// point links carry a 2-byte PPP header instead of Ethernet framing.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

struct FlowLine {
  uint32_t src, dst;
  uint64_t id, start_ps, size;
};

static uint64_t g_delivered = 0;
static void CountLocalDeliver(const Ipv4Header &, Ptr<const Packet>, uint32_t) { g_delivered++; }

static std::vector<FlowLine> ReadFlows(const std::string &path, uint32_t hosts) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", path.c_str());
    std::exit(2);
  }
  std::vector<FlowLine> flows;
  std::string line;
  uint32_t n = 0, nodes = 0;
  while (std::getline(in, line)) {
    n++;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string first;
    ss >> first;
    if (first == "Nodes") { ss >> nodes; continue; }
    if (first == "Connections") continue;
    auto arrow = first.find("->");
    if (arrow == std::string::npos) {
      std::fprintf(stderr, "%s:%u: expected 'SRC->DST id ID start PS size BYTES'\n", path.c_str(), n);
      std::exit(2);
    }
    FlowLine f{};
    f.src = std::stoul(first.substr(0, arrow));
    f.dst = std::stoul(first.substr(arrow + 2));
    std::string key;
    bool have_start = false, have_size = false;
    while (ss >> key) {
      if (key == "id") ss >> f.id;
      else if (key == "start") { ss >> f.start_ps; have_start = true; }
      else if (key == "size") { ss >> f.size; have_size = true; }
      else { std::fprintf(stderr, "%s:%u: unknown attribute '%s'\n", path.c_str(), n, key.c_str()); std::exit(2); }
    }
    if (!have_start || !have_size || f.src >= hosts || f.dst >= hosts) {
      std::fprintf(stderr, "%s:%u: needs start and size, hosts below %u\n", path.c_str(), n, hosts);
      std::exit(2);
    }
    flows.push_back(f);
  }
  if (nodes != hosts) {
    std::fprintf(stderr, "%s: Nodes %u but the k-ary fat-tree has %u hosts\n", path.c_str(), nodes, hosts);
    std::exit(2);
  }
  return flows;
}

// Sends `count` UDP datagrams of `payload` bytes, one every `gap`.
class PacedUdpSender : public Application {
 public:
  void Setup(Address peer, uint64_t count, uint32_t payload, Time gap) {
    m_peer = peer; m_left = count; m_payload = payload; m_gap = gap;
  }
 private:
  void StartApplication() override {
    m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
    m_socket->Connect(m_peer);
    SendOne();
  }
  void StopApplication() override {}
  void SendOne() {
    if (m_left == 0) return;
    m_socket->Send(Create<Packet>(m_payload));
    if (--m_left > 0) Simulator::Schedule(m_gap, &PacedUdpSender::SendOne, this);
  }
  Ptr<Socket> m_socket;
  Address m_peer;
  uint64_t m_left = 0;
  uint32_t m_payload = 0;
  Time m_gap;
};

int main(int argc, char **argv) {
  std::string flowsPath, transport = "udp";
  uint32_t k = 8;
  CommandLine cmd;
  cmd.AddValue("flows", "htsim connection-matrix flow list", flowsPath);
  cmd.AddValue("k", "fat-tree arity", k);
  cmd.AddValue("transport", "udp or tcp", transport);
  cmd.Parse(argc, argv);
  if (flowsPath.empty() || (transport != "udp" && transport != "tcp") || k < 2 || k % 2) {
    std::fprintf(stderr, "usage: fattree_bench --flows=FILE --k=EVEN --transport=udp|tcp\n");
    return 2;
  }
  auto wall0 = std::chrono::steady_clock::now();
  const uint32_t half = k / 2, pods = k, hosts = k * k * k / 4;
  auto flows = ReadFlows(flowsPath, hosts);

  Config::SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", BooleanValue(true));
  Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpCubic::GetTypeId()));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1000));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(16 << 20));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(16 << 20));

  NodeContainer hostNodes, tors, spines, cores;
  hostNodes.Create(hosts);
  tors.Create(pods * half);
  spines.Create(pods * half);
  cores.Create(half * half);
  InternetStackHelper stack;
  stack.Install(hostNodes);
  stack.Install(tors);
  stack.Install(spines);
  stack.Install(cores);

  // Device queues large enough that nothing is dropped here (100,000 packets, ~100 MB).
  PointToPointHelper hostLink, fabricLink;
  hostLink.SetDeviceAttribute("DataRate", StringValue("100Gbps"));
  hostLink.SetChannelAttribute("Delay", StringValue("1us"));
  hostLink.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("100000p"));
  fabricLink.SetDeviceAttribute("DataRate", StringValue("400Gbps"));
  fabricLink.SetChannelAttribute("Delay", StringValue("1us"));
  fabricLink.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("100000p"));

  Ipv4AddressHelper addr;
  addr.SetBase("10.0.0.0", "255.255.255.252");
  TrafficControlHelper tch;
  std::vector<Ipv4Address> hostAddr(hosts);
  auto connect = [&](PointToPointHelper &h, Ptr<Node> a, Ptr<Node> b) {
    NetDeviceContainer d = h.Install(a, b);
    Ipv4InterfaceContainer ifs = addr.Assign(d);
    addr.NewNetwork();
    tch.Uninstall(d);  // no queue discs: devices queue directly, as in innet
    return ifs;
  };
  for (uint32_t h = 0; h < hosts; h++) {
    uint32_t tor = h / half;
    hostAddr[h] = connect(hostLink, hostNodes.Get(h), tors.Get(tor)).GetAddress(0);
  }
  for (uint32_t p = 0; p < pods; p++)
    for (uint32_t s = 0; s < half; s++) {
      for (uint32_t t = 0; t < half; t++) connect(fabricLink, tors.Get(p * half + t), spines.Get(p * half + s));
      for (uint32_t c = 0; c < half; c++) connect(fabricLink, spines.Get(p * half + s), cores.Get(s * half + c));
    }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  for (uint32_t h = 0; h < hosts; h++) {
    hostNodes.Get(h)->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext("LocalDeliver", MakeCallback(&CountLocalDeliver));
    PacketSinkHelper sink(transport == "udp" ? "ns3::UdpSocketFactory" : "ns3::TcpSocketFactory",
                          InetSocketAddress(Ipv4Address::GetAny(), 9));
    sink.Install(hostNodes.Get(h)).Start(Seconds(0));
  }
  // UDP pacing: one 1000-byte datagram per serialization time of its 1030-byte PPP frame.
  const Time gap = PicoSeconds(1030ull * 8 * 1000000000000ull / 100000000000ull);
  for (const auto &f : flows) {
    Address peer = InetSocketAddress(hostAddr[f.dst], 9);
    Time start = PicoSeconds(f.start_ps);
    if (transport == "udp") {
      auto app = CreateObject<PacedUdpSender>();
      app->Setup(peer, (f.size + 999) / 1000, 1000, gap);
      hostNodes.Get(f.src)->AddApplication(app);
      app->SetStartTime(start);
    } else {
      BulkSendHelper bulk("ns3::TcpSocketFactory", peer);
      bulk.SetAttribute("MaxBytes", UintegerValue(f.size));
      bulk.SetAttribute("SendSize", UintegerValue(1000));
      bulk.Install(hostNodes.Get(f.src)).Start(start);
    }
  }
  Simulator::Run();
  double simS = Simulator::Now().GetSeconds();
  Simulator::Destroy();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  std::printf("{\"simulator\":\"ns-3.37\",\"k\":%u,\"transport\":\"%s\",\"flows\":%zu,\"delivered_packets\":%llu,"
              "\"wall_s\":%.3f,\"sim_time_s\":%.6f}\n",
              k, transport.c_str(), flows.size(), (unsigned long long)g_delivered, wall, simS);
  return 0;
}
