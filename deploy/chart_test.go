package deploy

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/module/store"
)

const namespace = "kord-test"

// manifests is what one rendering of the chart produced, decoded.
type manifests struct {
	sts  map[int]*appsv1.StatefulSet // by site
	svc  map[string]*corev1.Service
	pdb  []*policyv1.PodDisruptionBudget
	np   []*networkingv1.NetworkPolicy
	jobs []*batchv1.Job
}

// render renders the chart with vals over its defaults, as helm install
// would (release "kord" in namespace kord-test).
func render(vals map[string]any) (map[string]string, error) {
	ch, err := loader.Load("helm/kord")
	if err != nil {
		return nil, err
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "kord", Namespace: namespace, Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// decode decodes every rendered object strictly into its Kubernetes API
// type: an unknown kind, an unknown field or a duplicate field fails.
func decode(t *testing.T, files map[string]string) *manifests {
	t.Helper()
	m := &manifests{sts: map[int]*appsv1.StatefulSet{}, svc: map[string]*corev1.Service{}}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for _, doc := range docSep.Split(files[name], -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			strict := func(o any) {
				if err := yaml.UnmarshalStrict([]byte(doc), o); err != nil {
					t.Fatalf("%s: %s %s: %v\n%s", name, tm.APIVersion, tm.Kind, err, doc)
				}
			}
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 StatefulSet":
				o := &appsv1.StatefulSet{}
				strict(o)
				site, err := strconv.Atoi(o.Spec.Template.Labels["kord.dev/site"])
				if err != nil {
					t.Fatalf("StatefulSet %s: site label: %v", o.Name, err)
				}
				m.sts[site] = o
			case "v1 Service":
				o := &corev1.Service{}
				strict(o)
				m.svc[o.Name] = o
			case "policy/v1 PodDisruptionBudget":
				o := &policyv1.PodDisruptionBudget{}
				strict(o)
				m.pdb = append(m.pdb, o)
			case "networking.k8s.io/v1 NetworkPolicy":
				o := &networkingv1.NetworkPolicy{}
				strict(o)
				m.np = append(m.np, o)
			case "batch/v1 Job":
				o := &batchv1.Job{}
				strict(o)
				m.jobs = append(m.jobs, o)
			default:
				t.Fatalf("%s: unexpected object %s %s", name, tm.APIVersion, tm.Kind)
			}
		}
	}
	return m
}

func stripComments(doc string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// flag is the value after --name in args.
func flag(t *testing.T, c *corev1.Container, name string) string {
	t.Helper()
	for i, a := range c.Args {
		if a == "--"+name && i+1 < len(c.Args) {
			return c.Args[i+1]
		}
	}
	t.Fatalf("container %s has no --%s: %v", c.Name, name, c.Args)
	return ""
}

func hasFlag(c *corev1.Container, name string) bool { return slices.Contains(c.Args, "--"+name) }

func container(t *testing.T, cs []corev1.Container, name string) *corev1.Container {
	t.Helper()
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

// mountOf is the mount of c whose path holds file, and its volume.
func mountOf(t *testing.T, c *corev1.Container, file string) corev1.VolumeMount {
	t.Helper()
	var best corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(file, m.MountPath+"/") && len(m.MountPath) > len(best.MountPath) {
			best = m
		}
	}
	if best.Name == "" {
		t.Fatalf("container %s: %s is on no volume (mounts %v)", c.Name, file, c.VolumeMounts)
	}
	return best
}

func volume(t *testing.T, s *appsv1.StatefulSet, name string) *corev1.Volume {
	t.Helper()
	for i := range s.Spec.Template.Spec.Volumes {
		if v := &s.Spec.Template.Spec.Volumes[i]; v.Name == name {
			return v
		}
	}
	return nil
}

func port(t *testing.T, addr string) int32 {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	p, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("address %q has no port", addr)
	}
	return int32(p)
}

func containerPort(t *testing.T, c *corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %s", c.Name, name)
	return 0
}

func servicePort(t *testing.T, s *corev1.Service, name string) corev1.ServicePort {
	t.Helper()
	for _, p := range s.Spec.Ports {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("service %s has no port %s", s.Name, name)
	return corev1.ServicePort{}
}

// TestChartRenders renders the chart for 1 and 3 pairs, decodes every
// object strictly into the Kubernetes API types, and checks the
// invariants a deployment depends on.
func TestChartRenders(t *testing.T) {
	for _, pairs := range []int{1, 3} {
		t.Run(fmt.Sprintf("pairs=%d", pairs), func(t *testing.T) {
			files, err := render(map[string]any{"pairs": pairs})
			if err != nil {
				t.Fatal(err)
			}
			m := decode(t, files)
			checkSites(t, m, pairs)
		})
	}
}

func checkSites(t *testing.T, m *manifests, pairs int) {
	if len(m.sts) != 2 || len(m.pdb) != 2 || len(m.np) != 2 || len(m.jobs) != 1 {
		t.Fatalf("%d StatefulSets, %d PDBs, %d NetworkPolicies, %d Jobs: want 2, 2, 2, 1", len(m.sts), len(m.pdb), len(m.np), len(m.jobs))
	}
	var tlsSecrets []string
	for site := range 2 {
		s := m.sts[site]
		pod := s.Spec.Template.Spec
		if s.Spec.Replicas == nil || int(*s.Spec.Replicas) != pairs {
			t.Fatalf("site %d: replicas %v, want %d (pod i is pair i)", site, s.Spec.Replicas, pairs)
		}
		mod, party := container(t, pod.Containers, "module"), container(t, pod.Containers, "party")
		init := container(t, pod.InitContainers, "module-init")
		if mod.Args[0] != "module" || party.Args[0] != "party" || init.Args[0] != "module-init" {
			t.Fatalf("site %d: commands %s, %s, %s", site, mod.Args[0], party.Args[0], init.Args[0])
		}
		if flag(t, mod, "party") != strconv.Itoa(site) || flag(t, party, "party") != strconv.Itoa(site) {
			t.Fatalf("site %d: module --party %s, party --party %s", site, flag(t, mod, "party"), flag(t, party, "party"))
		}

		// The party's socket path is its module's, on one shared emptyDir.
		sock := flag(t, mod, "socket")
		if flag(t, party, "module") != sock {
			t.Fatalf("site %d: party dials %s, module serves %s", site, flag(t, party, "module"), sock)
		}
		ms, ps := mountOf(t, mod, sock), mountOf(t, party, sock)
		if ms.Name != ps.Name || ms.MountPath != ps.MountPath || volume(t, s, ms.Name) == nil || volume(t, s, ms.Name).EmptyDir == nil {
			t.Fatalf("site %d: socket %s on %+v (module) and %+v (party), want one emptyDir", site, sock, ms, ps)
		}

		// Separate users; the socket's group is both's.
		msc, psc := mod.SecurityContext, party.SecurityContext
		if msc == nil || psc == nil || msc.RunAsUser == nil || psc.RunAsUser == nil || *msc.RunAsUser == *psc.RunAsUser || *msc.RunAsUser == 0 || *psc.RunAsUser == 0 {
			t.Fatalf("site %d: module and party users %v, %v: want two non-root users", site, msc, psc)
		}
		if flag(t, mod, "party-uid") != strconv.FormatInt(*psc.RunAsUser, 10) || hasFlag(mod, "allow-same-uid") {
			t.Fatalf("site %d: module serves --party-uid %s, the party runs as %d", site, flag(t, mod, "party-uid"), *psc.RunAsUser)
		}
		group, err := strconv.ParseInt(flag(t, mod, "socket-group"), 10, 64)
		if err != nil || pod.SecurityContext == nil || !slices.Contains(pod.SecurityContext.SupplementalGroups, group) {
			t.Fatalf("site %d: socket group %s not among the pod's supplemental groups %v", site, flag(t, mod, "socket-group"), pod.SecurityContext)
		}
		for _, c := range []*corev1.Container{mod, party} {
			sc := c.SecurityContext
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) != 0 {
				t.Fatalf("site %d: %s's security context %+v", site, c.Name, sc)
			}
		}

		// State on a PVC, the module's alone; module-init gives its
		// directory to the module's user; no fsGroup (the kubelet would
		// make the volume group-writable, which the module refuses).
		state := flag(t, mod, "state")
		sm := mountOf(t, mod, state)
		if volume(t, s, sm.Name) != nil || len(s.Spec.VolumeClaimTemplates) != 2 || s.Spec.VolumeClaimTemplates[0].Name != sm.Name {
			t.Fatalf("site %d: state %s on volume %s, want the StatefulSet's volume claim", site, state, sm.Name)
		}
		if q := s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.IsZero() {
			t.Fatalf("site %d: state claim asks for no storage", site)
		}
		if pod.SecurityContext.FSGroup != nil {
			t.Fatalf("site %d: pod fsGroup %d: the state directory would be group-writable", site, *pod.SecurityContext.FSGroup)
		}
		if flag(t, init, "state-dir") != path.Dir(state) || mountOf(t, init, state).Name != sm.Name || mountOf(t, init, state).MountPath != sm.MountPath {
			t.Fatalf("site %d: module-init prepares %s, the module's state is %s", site, flag(t, init, "state-dir"), state)
		}
		if flag(t, init, "uid") != strconv.FormatInt(*msc.RunAsUser, 10) || msc.RunAsGroup == nil || flag(t, init, "gid") != strconv.FormatInt(*msc.RunAsGroup, 10) {
			t.Fatalf("site %d: module-init gives the state to %s:%s, the module runs as %v", site, flag(t, init, "uid"), flag(t, init, "gid"), msc)
		}
		if flag(t, init, "secret-to") != flag(t, mod, "secret-file") {
			t.Fatalf("site %d: the secret copy %s is not the module's --secret-file %s", site, flag(t, init, "secret-to"), flag(t, mod, "secret-file"))
		}
		if v := volume(t, s, mountOf(t, mod, flag(t, mod, "secret-file")).Name); v == nil || v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
			t.Fatalf("site %d: the secret copy is not in memory: %+v", site, v)
		}
		for _, pm := range party.VolumeMounts { // the party holds none of the module's secrets
			if pm.Name == sm.Name || pm.Name == "provision" || pm.Name == "secret-copy" {
				t.Fatalf("site %d: the party mounts the module's volume %s", site, pm.Name)
			}
		}
		checkModuleInit(t, init, state)

		// The party's own state file on a claim of its own, its directory
		// given to the party's user; pods are replaced only when deleted
		// (both sites are upgraded together: docs/operations.md).
		pstate := flag(t, party, "party-state")
		pm := mountOf(t, party, pstate)
		pinit := container(t, pod.InitContainers, "party-init")
		if s.Spec.VolumeClaimTemplates[1].Name != pm.Name || pm.Name == sm.Name || flag(t, pinit, "state-dir") != path.Dir(pstate) ||
			mountOf(t, pinit, pstate).Name != pm.Name || flag(t, pinit, "uid") != strconv.FormatInt(*psc.RunAsUser, 10) {
			t.Fatalf("site %d: the party's state %s on %+v, prepared by %v", site, pstate, pm, pinit.Args)
		}
		if s.Spec.UpdateStrategy.Type != "OnDelete" {
			t.Fatalf("site %d: update strategy %q, want OnDelete", site, s.Spec.UpdateStrategy.Type)
		}

		// Peer link: party 1 listens where its Service and container say;
		// party 0 dials that port on site 1's pod of its own pair.
		svc := m.svc[s.Spec.ServiceName]
		if svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
			t.Fatalf("site %d: governing Service %s: %+v", site, s.Spec.ServiceName, svc)
		}
		for k, v := range svc.Spec.Selector {
			if s.Spec.Template.Labels[k] != v {
				t.Fatalf("site %d: Service selects %s=%s, pods carry %q", site, k, v, s.Spec.Template.Labels[k])
			}
		}
		if site == 1 {
			pl := port(t, flag(t, party, "peer-listen"))
			if containerPort(t, party, "peer") != pl || servicePort(t, svc, "peer").Port != pl {
				t.Fatalf("site 1: peer listens on %d, container port %d, Service port %d", pl, containerPort(t, party, "peer"), servicePort(t, svc, "peer").Port)
			}
		}

		// TLS from the site's Secret.
		tv := volume(t, s, mountOf(t, party, flag(t, party, "tls-cert")).Name)
		for _, f := range []string{"tls-key", "tls-ca"} {
			if mountOf(t, party, flag(t, party, f)).Name != tv.Name {
				t.Fatalf("site %d: --%s not on the TLS Secret's volume", site, f)
			}
		}
		if tv.Secret == nil || tv.Secret.SecretName == "" {
			t.Fatalf("site %d: TLS volume %+v is no Secret", site, tv)
		}
		tlsSecrets = append(tlsSecrets, tv.Secret.SecretName)

		// The application API: TLS with client certificates under the
		// site's CA, never plaintext; Pair and Status for the operator.
		for f, peerF := range map[string]string{"app-tls-cert": "tls-cert", "app-tls-key": "tls-key", "app-ca": "tls-ca"} {
			if flag(t, party, f) != flag(t, party, peerF) {
				t.Fatalf("site %d: --%s %s, want the site's certificate %s", site, f, flag(t, party, f), flag(t, party, peerF))
			}
		}
		if hasFlag(party, "app-plaintext") || flag(t, party, "operator") != "operator" {
			t.Fatalf("site %d: application API %v", site, party.Args)
		}

		// The seal key: from the site's Secret, copied by module-init to
		// the in-memory volume, where the module reads it.
		seal := flag(t, mod, "seal-key-file")
		if flag(t, init, "seal-key-to") != seal || mountOf(t, mod, seal).Name != "secret-copy" {
			t.Fatalf("site %d: --seal-key-file %s, module-init writes %s", site, seal, flag(t, init, "seal-key-to"))
		}
		sv := volume(t, s, mountOf(t, init, flag(t, init, "seal-key-from")).Name)
		if sv.Secret == nil || sv.Secret.SecretName != fmt.Sprintf("kord-seal-site%d", site) {
			t.Fatalf("site %d: seal key volume %+v", site, sv)
		}
		for _, pm := range party.VolumeMounts {
			if pm.Name == sv.Name {
				t.Fatalf("site %d: the party mounts the seal key", site)
			}
		}
		// The module removes its secret copy once paired: it may write
		// the volume.
		if !hasFlag(mod, "remove-secret-after-pairing") || mountOf(t, mod, flag(t, mod, "secret-file")).ReadOnly {
			t.Fatalf("site %d: the module cannot remove its secret copy after pairing: %v", site, mod.Args)
		}

		// Probes and scrape annotations on the party's metrics port.
		mp := port(t, flag(t, party, "metrics"))
		if containerPort(t, party, "metrics") != mp {
			t.Fatalf("site %d: --metrics port %d, container port %d", site, mp, containerPort(t, party, "metrics"))
		}
		for probe, want := range map[*corev1.Probe]string{party.ReadinessProbe: "/readyz", party.LivenessProbe: "/healthz"} {
			if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.String() != "metrics" {
				t.Fatalf("site %d: probe %+v, want GET %s on metrics", site, probe, want)
			}
		}
		ann := s.Spec.Template.Annotations
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.Itoa(int(mp)) || ann["prometheus.io/path"] != "/metrics" {
			t.Fatalf("site %d: scrape annotations %v", site, ann)
		}
		if containerPort(t, party, "app") != port(t, flag(t, party, "listen")) || servicePort(t, svc, "app").Port != port(t, flag(t, party, "listen")) {
			t.Fatalf("site %d: app port", site)
		}

		// Requests follow the measured CPU per key (values.yaml).
		for _, c := range []struct {
			c  *corev1.Container
			us float64
		}{{mod, 1.2}, {party, 2.4}} {
			want := resource.MustParse(fmt.Sprintf("%dm", max(10, int(ceil(20000*c.us*2/1000)))))
			if got := c.c.Resources.Requests[corev1.ResourceCPU]; got.Cmp(want) != 0 {
				t.Fatalf("site %d: %s requests %s CPU, want %s", site, c.c.Name, got.String(), want.String())
			}
			if c.c.Resources.Limits.Memory().IsZero() {
				t.Fatalf("site %d: %s has no memory limit", site, c.c.Name)
			}
		}

		// The site's pods spread over nodes.
		if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
			a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
			t.Fatalf("site %d: pods not spread over nodes: %+v", site, pod.Affinity)
		}

		// One PDB and one NetworkPolicy select the site's pods.
		selects := func(sel *metav1.LabelSelector) bool {
			if sel == nil || len(sel.MatchLabels) == 0 {
				return false
			}
			for k, v := range sel.MatchLabels {
				if s.Spec.Template.Labels[k] != v {
					return false
				}
			}
			return true
		}
		n := 0
		for _, p := range m.pdb {
			if selects(p.Spec.Selector) {
				n++
				if p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() != 1 {
					t.Fatalf("site %d: PDB maxUnavailable %v", site, p.Spec.MaxUnavailable)
				}
			}
		}
		for _, np := range m.np {
			if !selects(&np.Spec.PodSelector) {
				continue
			}
			n++
			// Every port has its rule, and no rule admits everyone.
			open := map[int32]int{}
			for _, r := range np.Spec.Ingress {
				if len(r.From) == 0 {
					t.Fatalf("site %d: an ingress rule for %v admits any source", site, r.Ports)
				}
				for _, p := range r.Ports {
					open[p.Port.IntVal]++
				}
			}
			want := map[int32]int{port(t, flag(t, party, "listen")): 1, mp: 1}
			if site == 1 {
				want[port(t, flag(t, party, "peer-listen"))] = 1
				// The peer port: site 0's parties.
				for _, r := range np.Spec.Ingress {
					if r.Ports[0].Port.IntVal == port(t, flag(t, party, "peer-listen")) &&
						(r.From[0].PodSelector == nil || r.From[0].PodSelector.MatchLabels["kord.dev/site"] != "0") {
						t.Fatalf("site 1: the peer port admits %+v, want site 0's parties", r.From)
					}
				}
			}
			if fmt.Sprint(open) != fmt.Sprint(want) {
				t.Fatalf("site %d: ingress ports %v, want %v", site, open, want)
			}
		}
		if n != 2 {
			t.Fatalf("site %d: %d PDBs and NetworkPolicies select its pods, want one each", site, n)
		}
	}
	if tlsSecrets[0] == tlsSecrets[1] {
		t.Fatalf("both sites use the TLS Secret %s", tlsSecrets[0])
	}

	// Party 0 of pair i dials party 1 of pair i.
	p0, p1 := container(t, m.sts[0].Spec.Template.Spec.Containers, "party"), container(t, m.sts[1].Spec.Template.Spec.Containers, "party")
	s1 := m.sts[1].Spec.ServiceName
	peer := flag(t, p0, "peer")
	if want := fmt.Sprintf("%s-$(POD_INDEX).%s.%s.svc:%d", m.sts[1].Name, s1, namespace, port(t, flag(t, p1, "peer-listen"))); peer != want {
		t.Fatalf("party 0 dials %s, want %s", peer, want)
	}
	if !hasIndexEnv(p0, "POD_INDEX", "metadata.labels['apps.kubernetes.io/pod-index']") {
		t.Fatal("party 0 has no POD_INDEX from its pod index")
	}

	// The pairing Job: one index per pair, each asking party 0 of its pair.
	j := m.jobs[0]
	if j.Spec.Completions == nil || int(*j.Spec.Completions) != pairs || j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("pairing Job: completions %v, mode %v", j.Spec.Completions, j.Spec.CompletionMode)
	}
	jc := &j.Spec.Template.Spec.Containers[0]
	if want := fmt.Sprintf("%s-$(JOB_COMPLETION_INDEX).%s.%s.svc:%d", m.sts[0].Name, m.sts[0].Spec.ServiceName, namespace, port(t, flag(t, p0, "listen"))); jc.Args[0] != "pair" || flag(t, jc, "app") != want {
		t.Fatalf("pairing Job asks %s, want %s", flag(t, jc, "app"), want)
	}
	if !slices.Contains(jc.Args, "--skip-paired") || j.Annotations["helm.sh/hook"] != "post-install,post-upgrade" {
		t.Fatalf("pairing Job %v, hooks %q: want it to run after install and upgrade, skipping paired pairs", jc.Args, j.Annotations["helm.sh/hook"])
	}
	if !hasIndexEnv(jc, "JOB_COMPLETION_INDEX", "metadata.annotations['batch.kubernetes.io/job-completion-index']") {
		t.Fatal("the pairing Job has no JOB_COMPLETION_INDEX")
	}
	for k, v := range map[string]string{"kord.dev/app-client": "true"} {
		if j.Spec.Template.Labels[k] != v {
			t.Fatalf("the pairing Job's pods are not application clients (NetworkPolicy): %v", j.Spec.Template.Labels)
		}
	}
	// It pairs as the operator, with its certificate from a Secret.
	if flag(t, jc, "app-server-name") != "kord-party-0" {
		t.Fatalf("pairing Job expects the server name %s", flag(t, jc, "app-server-name"))
	}
	var ov *corev1.Volume
	for _, f := range []string{"app-tls-cert", "app-tls-key", "app-ca"} {
		m := mountOf(t, jc, flag(t, jc, f))
		for i := range j.Spec.Template.Spec.Volumes {
			if v := &j.Spec.Template.Spec.Volumes[i]; v.Name == m.Name {
				ov = v
			}
		}
	}
	if ov == nil || ov.Secret == nil || ov.Secret.SecretName != "kord-app-operator" {
		t.Fatalf("pairing Job's certificate volume %+v", ov)
	}
}

func ceil(x float64) float64 {
	i := float64(int(x))
	if i < x {
		return i + 1
	}
	return i
}

func hasIndexEnv(c *corev1.Container, name, field string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == field {
			return true
		}
	}
	return false
}

// checkModuleInit runs the rendered module-init (its state directory moved
// under a temporary root, and for this test's own user, which cannot
// become the module's) on a world-writable volume, as a fresh volume can
// be: the module's state store then opens there.
func checkModuleInit(t *testing.T, init *corev1.Container, state string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, flag(t, init, "state-dir"))
	vol := filepath.Dir(dir)
	if err := os.MkdirAll(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(vol, 0o777)
	if err := daemon.PrepareModule(daemon.ModuleInit{StateDir: dir, UID: os.Geteuid(), GID: os.Getegid()}); err != nil {
		t.Fatal(err)
	}
	b, err := store.OpenBolt(filepath.Join(root, state), 0)
	if err != nil {
		t.Fatalf("the module's state store refuses what module-init prepared: %v", err)
	}
	b.Close()
}

// TestChartLint runs helm lint's checks (Chart.yaml, values, templates
// rendered and parsed as YAML, for Kubernetes 1.30): nothing at warning
// or above.
func TestChartLint(t *testing.T) {
	for _, pairs := range []int{1, 3} {
		kv := &chartutil.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}
		l := lint.AllWithKubeVersion("helm/kord", map[string]any{"pairs": pairs}, namespace, kv)
		for _, m := range l.Messages {
			t.Log(m) // INFO: the chart has no icon
			if m.Severity >= support.WarningSev {
				t.Errorf("pairs=%d: %s", pairs, m)
			}
		}
	}
}

// TestChartOneSite: a release of one site (one cluster each) renders that
// site alone, site 0 with the pairing Job and a given peer address.
func TestChartOneSite(t *testing.T) {
	files, err := render(map[string]any{"pairs": 2, "sites": []any{0}, "peer": map[string]any{"address": "site1-$(POD_INDEX).example.net:7400"}})
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, files)
	if len(m.sts) != 1 || m.sts[0] == nil || len(m.jobs) != 1 {
		t.Fatalf("site 0 alone: %d StatefulSets, %d Jobs", len(m.sts), len(m.jobs))
	}
	if p := flag(t, container(t, m.sts[0].Spec.Template.Spec.Containers, "party"), "peer"); p != "site1-$(POD_INDEX).example.net:7400" {
		t.Fatalf("peer %s", p)
	}
	files, err = render(map[string]any{"sites": []any{1}, "peer": map[string]any{"allowFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "203.0.113.0/24"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	m = decode(t, files)
	if len(m.sts) != 1 || m.sts[1] == nil || len(m.jobs) != 0 {
		t.Fatalf("site 1 alone: %d StatefulSets, %d Jobs", len(m.sts), len(m.jobs))
	}
	// Its peer port admits only peer.allowFrom.
	for _, r := range m.np[0].Spec.Ingress {
		if r.Ports[0].Port.IntVal == 7400 && (len(r.From) != 1 || r.From[0].IPBlock == nil || r.From[0].IPBlock.CIDR != "203.0.113.0/24") {
			t.Fatalf("site 1 alone: the peer port admits %+v", r.From)
		}
	}
}

// TestChartBadValues: values the deployment cannot run with fail to
// render, naming what is wrong.
func TestChartBadValues(t *testing.T) {
	for _, c := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"pairs": 0}, "pairs 0: want 1..256"},
		{map[string]any{"pairs": 300}, "pairs 300"},
		{map[string]any{"sites": []any{2}}, "2 is not a site"},
		{map[string]any{"ids": map[string]any{"party": map[string]any{"uid": 10001}}}, "different users"},
		{map[string]any{"ids": map[string]any{"module": map[string]any{"uid": 0}}}, "root"},
		{map[string]any{"tls": map[string]any{"secrets": []any{"one"}}}, "one Secret per site"},
		{map[string]any{"seal": map[string]any{"secrets": []any{"one"}}}, "seal.secrets"},
		{map[string]any{"app": map[string]any{"operator": ""}}, "app.operator"},
		{map[string]any{"app": map[string]any{"operatorSecret": ""}}, "app.operatorSecret"},
		{map[string]any{"sites": []any{1}}, "peer.allowFrom"},
	} {
		if _, err := render(c.vals); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.vals, err, c.want)
		}
	}
}

// TestDockerfile: the image is built static, runs as a non-root user, and
// its final stage has nothing but the binary (no shell).
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	var final []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "FROM ") {
			stages = append(stages, l)
			final = nil
		}
		final = append(final, l)
	}
	if len(stages) < 2 || !strings.HasPrefix(stages[len(stages)-1], "FROM scratch") {
		t.Fatalf("stages %v: want a build stage and a final FROM scratch", stages)
	}
	if !strings.Contains(string(b), "CGO_ENABLED=0 go build") {
		t.Fatal("the binary is not built static (CGO_ENABLED=0)")
	}
	var user, entry string
	for _, l := range final {
		switch {
		case strings.HasPrefix(l, "USER "):
			user = strings.TrimPrefix(l, "USER ")
		case strings.HasPrefix(l, "ENTRYPOINT "):
			entry = strings.TrimPrefix(l, "ENTRYPOINT ")
		case strings.HasPrefix(l, "RUN "):
			t.Fatalf("final stage runs %q: it has no shell", l)
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Fatalf("USER %q: want a numeric non-root uid", user)
	}
	if entry != `["/kord"]` {
		t.Fatalf("ENTRYPOINT %s: want the exec form [\"/kord\"]", entry)
	}
}
