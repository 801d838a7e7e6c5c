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

{{/* The Secret holding GRANULE_DATABASE_URL, GRANULE_API_TOKEN and GRANULE_AGENT_TOKEN. */}}
{{- define "granule.secretName" -}}
{{- default (include "granule.fullname" .) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* Prometheus scrape annotations for a pod serving /metrics on `port`; call with (dict "root" $ "port" 8413). */}}
{{- define "granule.podAnnotations" -}}
{{- if .root.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
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

{{/* Secret-backed variables; a key missing from the Secret leaves the variable unset. */}}
{{- define "granule.secretEnv" -}}
- name: GRANULE_DATABASE_URL
  valueFrom: { secretKeyRef: { name: {{ include "granule.secretName" .root }}, key: GRANULE_DATABASE_URL } }
{{- range .optional }}
- name: {{ . }}
  valueFrom: { secretKeyRef: { name: {{ include "granule.secretName" $.root }}, key: {{ . }}, optional: true } }
{{- end }}
{{- end -}}
