{{/* kord's chart helpers. A site context is (dict "root" $ "site" N). */}}

{{- define "kord.fullname" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* the name of site N's StatefulSet and of its headless Service */}}
{{- define "kord.siteName" -}}
{{- include "kord.fullname" .root }}-site{{ .site -}}
{{- end -}}

{{- define "kord.selector" -}}
app.kubernetes.io/name: kord
app.kubernetes.io/instance: {{ .root.Release.Name }}
kord.dev/site: {{ .site | quote }}
{{- end -}}

{{- define "kord.labels" -}}
{{ include "kord.selector" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* the image */}}
{{- define "kord.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{/* millicores for a daemon: keys/s per pair × µs per key × headroom / 1000, at least 10m */}}
{{- define "kord.millicores" -}}
{{- $m := ceil (divf (mulf .root.Values.capacity.keysPerSecPerPair .us .root.Values.capacity.headroom) 1000) | int -}}
{{- max 10 $m }}m
{{- end -}}

{{/* party 0's peer address for pair $(POD_INDEX) */}}
{{- define "kord.peerAddress" -}}
{{- if .Values.peer.address -}}
{{ .Values.peer.address }}
{{- else -}}
{{- $s1 := include "kord.siteName" (dict "root" . "site" 1) -}}
{{ $s1 }}-$(POD_INDEX).{{ $s1 }}.{{ .Release.Namespace }}.svc:{{ .Values.ports.peer }}
{{- end -}}
{{- end -}}

{{/* checks of the values, before anything renders */}}
{{- define "kord.validate" -}}
{{- if or (lt (int .Values.pairs) 1) (gt (int .Values.pairs) 256) -}}
{{- fail (printf "pairs %v: want 1..256 (client.MaxPoolPairs)" .Values.pairs) -}}
{{- end -}}
{{- if not .Values.sites -}}
{{- fail "sites: give 0, 1 or both" -}}
{{- end -}}
{{- range .Values.sites -}}
{{- if not (has (int .) (list 0 1)) -}}
{{- fail (printf "sites: %v is not a site (want 0 or 1)" .) -}}
{{- end -}}
{{- end -}}
{{- if eq (int .Values.ids.module.uid) (int .Values.ids.party.uid) -}}
{{- fail "ids: the module and the party must run as different users" -}}
{{- end -}}
{{- if or (eq (int .Values.ids.module.uid) 0) (eq (int .Values.ids.party.uid) 0) -}}
{{- fail "ids: neither the module nor the party runs as root" -}}
{{- end -}}
{{- if ne (len .Values.tls.secrets) 2 -}}
{{- fail "tls.secrets: give one Secret per site (two names)" -}}
{{- end -}}
{{- if ne (len .Values.seal.secrets) 2 -}}
{{- fail "seal.secrets: give one Secret per site (two names, or \"\" for an unsealed site)" -}}
{{- end -}}
{{- if not .Values.app.operator -}}
{{- fail "app.operator: name the operator identity (its certificate's kord-app:NAME)" -}}
{{- end -}}
{{- if and .Values.pairing.enabled (not .Values.app.operatorSecret) -}}
{{- fail "app.operatorSecret: the pairing Job needs the operator's certificate (a Secret with tls.crt, tls.key, ca.crt)" -}}
{{- end -}}
{{- $site0 := false -}}
{{- range .Values.sites -}}{{- if eq (int .) 0 -}}{{- $site0 = true -}}{{- end -}}{{- end -}}
{{- if and (not $site0) (not .Values.peer.allowFrom) -}}
{{- fail "peer.allowFrom: site 0 is not in this release, so name where its parties connect from (NetworkPolicy peers, e.g. an ipBlock), or nothing may reach the peer port" -}}
{{- end -}}
{{- end -}}
