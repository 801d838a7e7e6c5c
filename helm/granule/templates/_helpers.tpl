{{/* Chart name, truncated to the 63 characters Kubernetes allows. */}}
{{- define "granule.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-qualified name: <release>-granule, or the release name when it already contains "granule". */}}
{{- define "granule.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "granule.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "granule.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component; call with (dict "root" $ "component" "orchestrator"). */}}
{{- define "granule.selectorLabels" -}}
app.kubernetes.io/name: {{ include "granule.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Image of one component; call with (dict "root" $ "component" "orchestrator"). */}}
{{- define "granule.image" -}}
{{- printf "%s/%s:%s" .root.Values.image.registry .component (default .root.Chart.AppVersion .root.Values.image.tag) -}}
{{- end -}}

{{/* The NATS URL the services use: the chart's own server when it runs one. */}}
{{- define "granule.natsUrl" -}}
{{- if .Values.nats.server.enabled -}}
{{- printf "%s://%s-nats:%d" (ternary "tls" "nats" (ne .Values.nats.server.tls.secretName "")) (include "granule.fullname" .) (int .Values.nats.server.clientPort) -}}
{{- else -}}
{{- .Values.nats.url -}}
{{- end -}}
{{- end -}}

{{/* Prometheus scrape annotations for a pod serving /metrics on `port`; call with (dict "root" $ "port" 8413). */}}
{{- define "granule.podAnnotations" -}}
{{- if .root.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/*
Pod annotations that change when something the pod reads changes, so that the Deployment rolls:
the ConfigMap, the Secret the chart writes, every other Secret the pod reads as it is in the
cluster (helm install/upgrade look them up; helm template sees none), and secrets.rolloutToken.
Call with (dict "root" $ "secrets" (list "name" ...)).
*/}}
{{- define "granule.checksums" -}}
{{- $root := .root -}}
{{- $seen := dict -}}
{{- range .secrets }}
{{- if and . (not (and $root.Values.secrets.create (eq . $root.Values.secrets.name))) }}
{{- $found := lookup "v1" "Secret" $root.Release.Namespace . }}
{{- $_ := set $seen . (($found).data | default dict | toJson) }}
{{- end }}
{{- end }}
checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
checksum/secrets: {{ printf "%s|%s|%s" (include (print $root.Template.BasePath "/secret.yaml") $root) (toJson $seen) $root.Values.secrets.rolloutToken | sha256sum }}
{{- end -}}

{{/* Liveness (/healthz) and readiness (/readyz) probes on the container port named "health". */}}
{{- define "granule.probes" -}}
livenessProbe:
  httpGet: { path: /healthz, port: health }
  initialDelaySeconds: {{ .Values.probes.liveness.initialDelaySeconds }}
  periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
  timeoutSeconds: {{ .Values.probes.liveness.timeoutSeconds }}
  failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
readinessProbe:
  httpGet: { path: /readyz, port: health }
  initialDelaySeconds: {{ .Values.probes.readiness.initialDelaySeconds }}
  periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
  timeoutSeconds: {{ .Values.probes.readiness.timeoutSeconds }}
  failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
{{- end -}}

{{/* Pod-level settings shared by every workload. */}}
{{- define "granule.podSpecCommon" -}}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
Variables from secrets.name: `required` ones must be in it, `optional` ones are left unset when
missing. Call with (dict "root" $ "required" (list ...) "optional" (list ...)).
*/}}
{{- define "granule.secretEnv" -}}
{{- range .required }}
- name: {{ . }}
  valueFrom: { secretKeyRef: { name: {{ $.root.Values.secrets.name }}, key: {{ . }} } }
{{- end }}
{{- range .optional }}
- name: {{ . }}
  valueFrom: { secretKeyRef: { name: {{ $.root.Values.secrets.name }}, key: {{ . }}, optional: true } }
{{- end }}
{{- end -}}

{{/* GRANULE_NATS_CREDS and GRANULE_NATS_TLS_* for the files natsVolumes mounts; call with (dict "root" $ "credentials" .Values.nats.credentials.orchestrator). */}}
{{- define "granule.natsEnv" -}}
{{- if .credentials.secretName }}
- { name: GRANULE_NATS_CREDS, value: /etc/granule/nats/nats.creds }
{{- end }}
{{- with .root.Values.nats.tls }}
{{- if .secretName }}
- { name: GRANULE_NATS_TLS_CA, value: /etc/granule/nats-tls/ca.crt }
{{- if .clientCertificate }}
- { name: GRANULE_NATS_TLS_CERT, value: /etc/granule/nats-tls/tls.crt }
- { name: GRANULE_NATS_TLS_KEY, value: /etc/granule/nats-tls/tls.key }
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Mounts of natsVolumes, and a writable /tmp (the root filesystem is read-only). */}}
{{- define "granule.volumeMounts" -}}
- { name: tmp, mountPath: /tmp }
{{- if .credentials.secretName }}
- { name: nats-creds, mountPath: /etc/granule/nats, readOnly: true }
{{- end }}
{{- if .root.Values.nats.tls.secretName }}
- { name: nats-tls, mountPath: /etc/granule/nats-tls, readOnly: true }
{{- end }}
{{- end -}}

{{/* The pod's own .creds key only, the NATS TLS files, and /tmp. */}}
{{- define "granule.volumes" -}}
- name: tmp
  emptyDir: { medium: Memory, sizeLimit: 64Mi }
{{- with .credentials }}
{{- if .secretName }}
- name: nats-creds
  secret:
    secretName: {{ .secretName }}
    defaultMode: 0440
    items:
      - { key: {{ .key }}, path: nats.creds }
{{- end }}
{{- end }}
{{- with .root.Values.nats.tls }}
{{- if .secretName }}
- name: nats-tls
  secret:
    secretName: {{ .secretName }}
    defaultMode: 0440
    items:
      - { key: {{ .caKey }}, path: ca.crt }
      {{- if .clientCertificate }}
      - { key: {{ .certKey }}, path: tls.crt }
      - { key: {{ .keyKey }}, path: tls.key }
      {{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Names of the Secrets a service pod reads, for granule.checksums. */}}
{{- define "granule.podSecrets" -}}
{{- list .root.Values.secrets.name .credentials.secretName .root.Values.nats.tls.secretName | toJson -}}
{{- end -}}

{{/* NetworkPolicy egress rule to `to` peers (empty: any address) on `ports` (TCP). Call with a values.networkPolicy.egress entry. */}}
{{- define "granule.egressRule" -}}
- ports:
    {{- range .ports }}
    - { protocol: TCP, port: {{ . }} }
    {{- end }}
  {{- with .to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
