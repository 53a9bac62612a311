{{- define "test.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name | trunc 63 }}
test.magnetite.io/chart-version: {{ .Chart.Version | quote }}
test.magnetite.io/kube-version: {{ .Capabilities.KubeVersion.Version | quote }}
{{- end -}}
{{- define "test.deployment" -}}
apiVersion: apps/v1
kind: {{ .kind | default "Deployment" }}
metadata:
  name: {{ .name }}
  labels:
    {{- include "test.labels" .root | nindent 4 }}
spec:
  selector:
    matchLabels:
      app: {{ .name }}
  template:
    metadata:
      labels:
        app: {{ .name }}
    spec:
      {{- with .nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
      - name: main
        image: {{ .image }}
        {{- with .args }}
        args:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        {{- with .secret }}
        volumeMounts:
        - name: cloud-config
          mountPath: /etc/config
      volumes:
      - name: cloud-config
        secret:
          secretName: {{ . }}
        {{- end }}
{{- end -}}
