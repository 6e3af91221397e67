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

// Packets handed to a host's transport layer. `g_delivered` counts them all (TCP ACKs, SYNs and
// FINs too), as innet's delivered_packets does; `g_deliveredData` only UDP datagrams and TCP
// segments with payload (retransmitted copies included).
static uint64_t g_delivered = 0, g_deliveredData = 0;
static void CountLocalDeliver(const Ipv4Header &ip, Ptr<const Packet> p, uint32_t) {
  g_delivered++;
  if (ip.GetProtocol() == UdpL4Protocol::PROT_NUMBER) {
    g_deliveredData++;
  } else if (ip.GetProtocol() == TcpL4Protocol::PROT_NUMBER) {
    TcpHeader tcp;
    if (p->PeekHeader(tcp) && p->GetSize() > tcp.GetSerializedSize()) g_deliveredData++;
  }
}

// Application bytes the PacketSinks received (for TCP: in order, without retransmitted copies).
static uint64_t g_sinkBytes = 0;
static uint64_t g_expectBytes = 0;
static void CountSinkRx(Ptr<const Packet> p, const Address &) {
  g_sinkBytes += p->GetSize();
  // TCP leaves TIME_WAIT and other timers running for minutes of simulated time; stopping when
  // every byte is in keeps sim_time_s the time of the last delivery for both transports.
  if (g_sinkBytes == g_expectBytes) Simulator::Stop();
}

// Packets a device queue dropped; the queues are sized so this stays 0 (reported to show it).
static uint64_t g_dropped = 0;
static void CountDrop(Ptr<const Packet>) { g_dropped++; }

[[noreturn]] static void Fail(const std::string &path, uint32_t line, const std::string &what) {
  std::fprintf(stderr, "%s:%u: %s\n", path.c_str(), line, what.c_str());
  std::exit(2);
}

// A whole non-negative decimal number, or nothing (no exceptions, no partial parses).
static bool ParseU64(const std::string &tok, uint64_t &out) {
  if (tok.empty() || tok.size() > 20) return false;
  uint64_t v = 0;
  for (char c : tok) {
    if (c < '0' || c > '9') return false;
    uint64_t d = uint64_t(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

// Reads an htsim connection matrix ("Nodes N", "Connections M", "SRC->DST id ID start PS size
// BYTES"), the format crates/workloads writes; anything else is an error naming file:line.
static std::vector<FlowLine> ReadFlows(const std::string &path, uint32_t hosts) {
  std::ifstream in(path);
  if (!in) Fail(path, 0, "cannot open");
  std::vector<FlowLine> flows;
  std::string line;
  uint32_t n = 0;
  uint64_t nodes = 0, declared = 0;
  bool haveNodes = false, haveDeclared = false;
  while (std::getline(in, line)) {
    n++;
    std::istringstream ss(line);
    std::string first;
    if (!(ss >> first) || first[0] == '#') continue;
    std::string v;
    if (first == "Nodes" || first == "Connections") {
      uint64_t x;
      if (!(ss >> v) || !ParseU64(v, x)) Fail(path, n, "expected '" + first + " <number>'");
      if (first == "Nodes") { nodes = x; haveNodes = true; } else { declared = x; haveDeclared = true; }
      continue;
    }
    auto arrow = first.find("->");
    uint64_t src, dst;
    if (arrow == std::string::npos || !ParseU64(first.substr(0, arrow), src) || !ParseU64(first.substr(arrow + 2), dst))
      Fail(path, n, "expected 'Nodes N', 'Connections M' or 'SRC->DST id ID start PS size BYTES', got '" + line + "'");
    if (src >= hosts || dst >= hosts || src == dst)
      Fail(path, n, "source and destination must be different hosts below " + std::to_string(hosts));
    FlowLine f{uint32_t(src), uint32_t(dst), 0, 0, 0};
    bool haveId = false, haveStart = false, haveSize = false;
    std::string key;
    while (ss >> key) {
      uint64_t x;
      if (!(ss >> v) || !ParseU64(v, x)) Fail(path, n, "expected a number after '" + key + "'");
      if (key == "id") { f.id = x; haveId = true; }
      else if (key == "start") { f.start_ps = x; haveStart = true; }
      else if (key == "size") { f.size = x; haveSize = true; }
      else Fail(path, n, "unknown flow attribute '" + key + "' (expected id, start, size)");
    }
    if (!haveId || !haveStart || !haveSize || f.size == 0) Fail(path, n, "a flow needs id, start and a size of at least 1 byte");
    flows.push_back(f);
  }
  if (!haveNodes || nodes != hosts)
    Fail(path, 0, "'Nodes " + std::to_string(nodes) + "' but the fat-tree has " + std::to_string(hosts) + " hosts");
  if (haveDeclared && declared != flows.size())
    Fail(path, 0, "'Connections " + std::to_string(declared) + "' but " + std::to_string(flows.size()) + " flows follow");
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
    ApplicationContainer sinkApp = sink.Install(hostNodes.Get(h));
    sinkApp.Start(Seconds(0));
    sinkApp.Get(0)->TraceConnectWithoutContext("Rx", MakeCallback(&CountSinkRx));
  }
  // UDP pacing: one 1000-byte datagram per serialization time of its 1030-byte PPP frame.
  const Time gap = PicoSeconds(1030ull * 8 * 1000000000000ull / 100000000000ull);
  uint64_t sentPackets = 0;  // UDP: datagrams sent; TCP: the segments the flow sizes need
  for (const auto &f : flows) {
    sentPackets += (f.size + 999) / 1000;
    g_expectBytes += transport == "udp" ? (f.size + 999) / 1000 * 1000 : f.size;
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
  Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::PointToPointNetDevice/TxQueue/Drop",
                                MakeCallback(&CountDrop));
  auto run0 = std::chrono::steady_clock::now();
  Simulator::Run();
  double runWall = std::chrono::duration<double>(std::chrono::steady_clock::now() - run0).count();
  double simS = Simulator::Now().GetSeconds();
  uint64_t events = Simulator::GetEventCount();
  Simulator::Destroy();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  std::printf("{\"simulator\":\"ns-3.37\",\"k\":%u,\"transport\":\"%s\",\"flows\":%zu,\"sent_packets\":%llu,"
              "\"delivered_packets\":%llu,\"delivered_data_packets\":%llu,\"sink_bytes\":%llu,\"dropped_packets\":%llu,\"wall_s\":%.3f,\"run_wall_s\":%.3f,\"sim_time_s\":%.9f,\"events\":%llu}\n",
              k, transport.c_str(), flows.size(), (unsigned long long)sentPackets, (unsigned long long)g_delivered,
              (unsigned long long)g_deliveredData, (unsigned long long)g_sinkBytes, (unsigned long long)g_dropped, wall, runWall, simS, (unsigned long long)events);
  return 0;
}
