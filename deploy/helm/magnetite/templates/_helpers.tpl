{{- define "magnetite.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "magnetite.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "magnetite.selectorLabels" -}}
app.kubernetes.io/name: {{ include "magnetite.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "magnetite.labels" -}}
{{ include "magnetite.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "magnetite.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "magnetite.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "magnetite.secretName" -}}
{{- printf "%s-secrets" (include "magnetite.fullname" .) -}}
{{- end -}}

{{/* magnetite.conf: the values' sections with what the chart decides. */}}
{{- define "magnetite.conf" -}}
{{- $config := deepCopy .Values.config -}}
{{- $mgmt := get $config "management" | default dict -}}
{{- if not .Values.rbac.releaseNamespaces -}}
{{- $_ := set $mgmt "delete_empty_namespaces" "false" -}}
{{- end -}}
{{- $_ := set $config "management" $mgmt -}}
{{- /* The pod's state volume is an emptyDir, which kubelet makes root's
with mode 2777; Magnetite keeps its state 0700 in a directory of its own
inside it. */ -}}
{{- $default := get $config "DEFAULT" | default dict -}}
{{- if not (hasKey $default "state_dir") -}}
{{- $_ := set $default "state_dir" "/var/lib/magnetite/state" -}}
{{- end -}}
{{- $_ := set $config "DEFAULT" $default -}}
{{- $api := get $config "api" | default dict -}}
{{- $_ := set $api "listen" (printf "0.0.0.0:%v" .Values.service.port) -}}
{{- $_ := set $config "api" $api -}}
{{- range $section := keys $config | sortAlpha }}
[{{ $section }}]
{{- $options := get $config $section }}
{{- range $name := keys $options | sortAlpha }}
{{ $name }} = {{ get $options $name }}
{{- end }}
{{- end }}
{{- end -}}
