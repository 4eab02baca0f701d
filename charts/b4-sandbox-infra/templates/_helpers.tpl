{{/* Labels on every object the chart renders (not the sandbox Pods' own labels). */}}
{{- define "b4infra.labels" -}}
app.kubernetes.io/name: b4-sandbox-infra
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The sandbox namespace; the release must live elsewhere (the management namespace). */}}
{{- define "b4infra.namespace" -}}
{{- if eq .Values.namespace.name .Release.Namespace -}}
{{- fail (printf "namespace.name %q is the release namespace: install the release in the management namespace (b4-app), not where the sandboxes run" .Values.namespace.name) -}}
{{- end -}}
{{- .Values.namespace.name -}}
{{- end -}}

{{/* The selector of every b4box sandbox Pod (keepers, pool, prepare and reader Pods). */}}
{{- define "b4infra.sandboxSelector" -}}
app.kubernetes.io/managed-by: b4
{{- end -}}

{{/* The reaper's image: repository@digest, else repository:tag (tag defaults to appVersion). */}}
{{- define "b4infra.reaperImage" -}}
{{- $i := .Values.reaper.image -}}
{{- if $i.digest -}}
{{- printf "%s@%s" $i.repository $i.digest -}}
{{- else -}}
{{- printf "%s:%s" $i.repository (default .Chart.AppVersion $i.tag) -}}
{{- end -}}
{{- end -}}

{{/* The orchestrator subjects: the created ServiceAccount (if any), then orchestrator.subjects. */}}
{{- define "b4infra.subjects" -}}
{{- $subjects := list -}}
{{- if and .Values.orchestrator.serviceAccount .Values.orchestrator.serviceAccount.create -}}
{{- $subjects = append $subjects (dict "kind" "ServiceAccount" "name" .Values.orchestrator.serviceAccount.name "namespace" .Release.Namespace) -}}
{{- end -}}
{{- range .Values.orchestrator.subjects -}}
{{- if eq .kind "ServiceAccount" -}}
{{- $subjects = append $subjects (dict "kind" "ServiceAccount" "name" .name "namespace" .namespace) -}}
{{- else -}}
{{- $subjects = append $subjects (dict "kind" .kind "name" .name "apiGroup" "rbac.authorization.k8s.io") -}}
{{- end -}}
{{- end -}}
{{- toYaml (uniq $subjects) -}}
{{- end -}}

{{/* A resource quantity as a quoted string: numbers from values files arrive as float64. */}}
{{- define "b4infra.quantity" -}}
{{- if kindIs "float64" . -}}
{{- int64 . | toString | quote -}}
{{- else -}}
{{- toString . | quote -}}
{{- end -}}
{{- end -}}

{{/* The pre-pull DaemonSet's containers: Restricted, tiny, nothing writable. */}}
{{- define "b4infra.prepullContainer" -}}
securityContext:
  allowPrivilegeEscalation: false
  privileged: false
  readOnlyRootFilesystem: true
  runAsNonRoot: true
  capabilities:
    drop: [ALL]
resources:
  requests:
    cpu: "1m"
    memory: "8Mi"
    ephemeral-storage: "1Mi"
  limits:
    cpu: "10m"
    memory: "32Mi"
    ephemeral-storage: "8Mi"
{{- end -}}
